package dev.fenceline.election;

/** Why a {@link Leadership} (one term held by one candidate) ended. */
public enum LossReason {
    /** {@link LeaderElection#resign()} was called. */
    RESIGNED,
    /** An operator wrote the election's {@code resign-request} key ({@link ElectionAdmin#requestResign}). */
    RESIGN_REQUESTED,
    /** The kill switch key ({@code paused}) appeared. */
    PAUSED,
    /** etcd reported the session's lease gone (expired or revoked): every record bound to it is gone. */
    LEASE_EXPIRED,
    /** A linearizable read showed the leader record deleted or no longer ours. */
    RECORD_GONE,
    /** The election or its session was closed. */
    CLOSED
}
