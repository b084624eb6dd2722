package dev.fenceline.task;

/** How one run of a {@link LeaderTask} ended. */
public enum RunOutcome {
    /** The fenced transaction committed at the leadership's term and did some work. */
    COMMITTED,
    /** {@link TaskWork#plan} found nothing (no transaction was opened), or the committed run reported 0 units. */
    NOTHING_TO_DO,
    /**
     * PostgreSQL had accepted a higher term: nothing of the run persisted, the rejection is audited in
     * {@code fencing.rejected_write}, and the task resigns its term (it campaigns again after the hold-off).
     */
    REJECTED_STALE,
    /** The plan or the work threw, or the fence could not be established: rolled back; the task backs off. */
    FAILED,
    /**
     * The connection died during COMMIT: the run may or may not have committed (the fence kept the order either
     * way). Reconcile by business key; the task carries on.
     */
    COMMIT_UNKNOWN
}
