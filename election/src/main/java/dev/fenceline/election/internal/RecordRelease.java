package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionKeys;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes a leader record of this candidate's, guarded on its mod revision and exact bytes, retrying until etcd
 * answers. Invariant: a pending deletion runs before any new decision of the election (the state machine asks
 * {@link #pending()} first). Confined to the election's serial executor.
 */
final class RecordRelease {
    // the election's logger: these lines are the election's record releases
    private static final Logger log = LoggerFactory.getLogger(DefaultLeaderElection.class);

    /**
     * A guarded delete of the leader key: mod revision AND value must match. The value (with its random nonce)
     * makes it ours in any cluster history: after a coordinator rebuild a retried delete may reach the new
     * cluster before the change is detected, where the same mod revision can belong to someone else's record.
     */
    private record RecordToDelete(
            long leaseId, long modRevision, byte[] value, boolean withResignRequest, CompletableFuture<Void> done) {}

    private final ElectionStore store;
    private final ElectionKeys keys;
    private final String candidateId;
    private final EtcdOperationSlot slot;

    /** The delete to send; null when none is pending. */
    private @Nullable RecordToDelete recordToDelete;

    RecordRelease(ElectionStore store, ElectionKeys keys, String candidateId, EtcdOperationSlot slot) {
        this.store = store;
        this.keys = keys;
        this.candidateId = candidateId;
        this.slot = slot;
    }

    boolean pending() {
        return recordToDelete != null;
    }

    /**
     * Deletes this record (at once, or after the operation in flight); {@code done} completes when etcd confirmed
     * the delete or the record stopped mattering ({@link #drop}, {@link #dropIfOnLease}).
     */
    void release(
            long leaseId, long modRevision, byte[] value, boolean withResignRequest, CompletableFuture<Void> done) {
        recordToDelete = new RecordToDelete(leaseId, modRevision, value, withResignRequest, done);
        if (!slot.busy()) {
            deleteNow();
        } else {
            slot.markDirty();
        }
    }

    /** Sends the pending delete; the slot must be free. */
    // identity on purpose: a request equal in value but made later (a new release) is not the one in flight
    @SuppressWarnings("ReferenceEquality")
    void deleteNow() {
        RecordToDelete d = recordToDelete;
        if (d == null) {
            return; // nothing pending (callers check pending() first)
        }
        slot.run(() -> store.deleteRecord(keys, d.modRevision(), d.value(), d.withResignRequest()), (deleted, e) -> {
            if (recordToDelete != d) {
                return; // dropped while in flight
            }
            if (e == null) {
                recordToDelete = null;
                log.info(
                        "leader record released: election={} candidate={} lease={} deleted={}",
                        keys.election(),
                        candidateId,
                        d.leaseId(),
                        deleted ? "yes" : "no (already gone or replaced)");
                d.done().complete(null);
                slot.markDirty();
            } else {
                log.warn(
                        "deleting leader record failed, retrying: election={} error=\"{}\"",
                        keys.election(),
                        EtcdFailure.describe(e));
                slot.retryWithBackoff();
            }
        });
    }

    /**
     * Forgets the pending delete: it targets a record of an older etcd history, where its compare revision could
     * match a stranger's record in the new one. A leftover of ours in the new history is found by the next read.
     */
    void drop() {
        if (recordToDelete != null) {
            recordToDelete.done().complete(null);
            recordToDelete = null;
        }
    }

    /** The lease is gone and the record went with it. */
    void dropIfOnLease(long leaseId) {
        if (recordToDelete != null && recordToDelete.leaseId() == leaseId) {
            recordToDelete.done().complete(null);
            recordToDelete = null;
        }
    }
}
