package dev.fenceline.election.internal;

import org.jspecify.annotations.Nullable;

/**
 * Which etcd history (cluster) this session talks to, and the revision its prefix watch has seen up to.
 *
 * <p><b>Why.</b> The watch is re-created from {@code revision + 1}. A cluster rebuilt from nothing (members
 * wiped, new cluster on the same endpoints) starts its revisions again at 1; watching from an old, higher
 * revision would deliver nothing until the new cluster caught up, so followers would miss the leader key's
 * deletion and takeovers would stall (liveness; safety never depends on the watch). So every response header
 * is checked, and a change of history resets the revision to the new header's revision.
 *
 * <p><b>When a header proves another history</b> (no false positives, which would cost a watch restart and a
 * re-read of every election):
 * <ul>
 *   <li>its cluster id differs from the one seen before (a cluster id never changes for a cluster's lifetime);</li>
 *   <li>or, for a linearizable response (range read, txn, lease grant/revoke: served after the member applied
 *       everything committed before the request), its revision is below the revision known <em>when the request
 *       was sent</em>: within one history such a response is at least every revision committed before it was
 *       sent. Lease keep-alives and watch headers come from a member's local state and may lag, so for them
 *       only the cluster id counts. A rebuilt cluster keeps the cluster id when started with the same token and
 *       peer URLs, hence the revision test.</li>
 * </ul>
 * Responses to requests sent before the last reset are ignored ({@link Mark#epoch}), so one rebuild causes one
 * reset, and revisions of an older history never raise the current one.
 */
final class ClusterHistory {
    /** What was known when a request was sent (or a watch created). */
    record Mark(long epoch, long revision) {}

    private long clusterId; // 0 = not seen yet
    private long revision;
    private long epoch;

    synchronized Mark mark() {
        return new Mark(epoch, revision);
    }

    synchronized long revision() {
        return revision;
    }

    /** Raises the revision (watch events, compaction recovery) unless a reset happened since {@code sent}. */
    synchronized void advance(Mark sent, long seen) {
        if (sent.epoch() == epoch) {
            revision = Math.max(revision, seen);
        }
    }

    /**
     * Checks one response header.
     *
     * @return a description of the change if this header proves a different history (the revision is then reset
     *     to {@code headerRevision}), otherwise null
     */
    synchronized @Nullable String observe(Mark sent, long headerClusterId, long headerRevision, boolean linearizable) {
        if (sent.epoch() != epoch || headerClusterId == 0) {
            return null; // sent before the last reset: tells nothing new
        }
        String change = null;
        if (clusterId != 0 && headerClusterId != clusterId) {
            change = "cluster id changed from " + Long.toUnsignedString(clusterId, 16) + " to "
                    + Long.toUnsignedString(headerClusterId, 16);
        } else if (linearizable && headerRevision < sent.revision()) {
            change = "linearizable response at revision " + headerRevision + " below revision " + sent.revision()
                    + " seen before it was sent";
        }
        clusterId = headerClusterId;
        if (change != null) {
            revision = headerRevision;
            epoch++;
        }
        return change;
    }
}
