package dev.fenceline.task;

import dev.fenceline.election.LeaderRecord;
import dev.fenceline.election.LeadershipState;
import org.jspecify.annotations.Nullable;

/**
 * A snapshot for health endpoints and dashboards (cheap; no I/O).
 *
 * @param resource       the fenced resource
 * @param electionName   the election campaigned in
 * @param candidateId    this task's candidate id
 * @param phase          where the task is
 * @param electionState  the election's own state
 * @param term           the term held (LEADING or SUSPECT), else the last held, 0 if never
 * @param valid          true iff the leadership is valid right now (work may start)
 * @param lastRun        the last run, or null
 * @param runsCommitted  runs with outcome COMMITTED so far
 * @param runsRejected   runs with outcome REJECTED_STALE so far
 * @param failure        in phase {@link TaskPhase#FAILED}: what stopped the task and what fixes it; otherwise null
 * @param observedLeader who leads the task's election (this task or another), as its handle last read it; null when
 *                       no leader was there ({@link dev.fenceline.election.LeaderElection#observedLeader()})
 */
public record TaskHealth(
        String resource,
        String electionName,
        String candidateId,
        TaskPhase phase,
        LeadershipState electionState,
        long term,
        boolean valid,
        @Nullable RunResult lastRun,
        long runsCommitted,
        long runsRejected,
        @Nullable String failure,
        @Nullable LeaderRecord observedLeader) {
    /** Up unless stopping, stopped or failed: a follower is healthy. */
    public boolean up() {
        return phase != TaskPhase.STOPPING && phase != TaskPhase.STOPPED && phase != TaskPhase.FAILED;
    }
}
