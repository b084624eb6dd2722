package dev.fenceline.task;

import dev.fenceline.election.LeadershipState;
import dev.fenceline.fencing.CommitOutcomeUnknownException;
import dev.fenceline.fencing.StaleTermException;

/**
 * The task's decisions as pure functions of what the election, PostgreSQL and the clock said (no I/O, no clock
 * reads, no threads; table-tested in TaskDecisionTest). The loop in {@link LeaderTask} reads, calls these, and
 * carries the result out.
 */
final class TaskDecision {
    private TaskDecision() {
    }

    /**
     * Everything {@link #next} depends on.
     *
     * @param stopping        close() was called
     * @param state           the election's state
     * @param term            the term of the election's leadership, 0 when none
     * @param valid           that leadership is valid right now
     * @param checkedTerm     the term last found above the database's mark (-1: none)
     * @param resignedTerm    the term this task last resigned (-1: none); the election may report it for a moment
     * @param nextRunAtNanos  earliest start of the next run (monotonic clock)
     * @param nowNanos        the monotonic clock now
     * @param maxWaitNanos    longest wait before looking again without being woken
     */
    record Facts(boolean stopping, LeadershipState state, long term, boolean valid, long checkedTerm,
                 long resignedTerm, long nextRunAtNanos, long nowNanos, long maxWaitNanos) {
    }

    sealed interface Action {
    }

    /** close() was called: no new run; hand over. */
    record Stop() implements Action {
    }

    /** No run now: be in {@code phase}, look again after {@code nanos} or when woken. */
    record Wait(TaskPhase phase, long nanos, String why) implements Action {
    }

    /** A term not compared with the database yet: read the mark before its first run. */
    record CheckTerm(long term) implements Action {
    }

    /** Run the work once at {@code term}. */
    record Run(long term) implements Action {
    }

    static Action next(Facts f) {
        if (f.stopping()) {
            return new Stop();
        }
        if (f.term() <= 0 || f.state() == LeadershipState.LOST || f.state() == LeadershipState.CLOSED) {
            return new Wait(TaskPhase.CAMPAIGNING, f.maxWaitNanos(), "not leader (" + f.state() + ")");
        }
        if (f.term() == f.resignedTerm()) {
            return new Wait(TaskPhase.CAMPAIGNING, f.maxWaitNanos(), "resigned term " + f.term());
        }
        if (f.state() != LeadershipState.LEADER || !f.valid()) {
            // SUSPECT, or LEADER whose deadline passed before the election noticed: no new run (fail closed)
            return new Wait(TaskPhase.SUSPECT, f.maxWaitNanos(), "term " + f.term() + " not provably held ("
                    + f.state() + (f.valid() ? "" : ", validity over") + ")");
        }
        if (f.term() != f.checkedTerm()) {
            return new CheckTerm(f.term());
        }
        long untilRun = f.nextRunAtNanos() - f.nowNanos();
        if (untilRun > 0) {
            return new Wait(TaskPhase.LEADING, Math.min(untilRun, f.maxWaitNanos()), "next run not due yet");
        }
        return new Run(f.term());
    }

    /**
     * Whether a freshly won term may write. It may when it is above the database's mark, or equal to it and this task
     * presented that term itself (it advanced the mark). Equal but presented by someone else would mean the election
     * issued one term twice (a coordinator rebuilt from nothing): never write with it. Below: the election is behind
     * the database.
     */
    static boolean termUsable(long term, long databaseMark, boolean presentedByThisTask) {
        return term > databaseMark || (term == databaseMark && presentedByThisTask);
    }

    /**
     * The term floor to ask the election for so that its next term is above the database's mark, or 0 when the
     * election's counter is already above it.
     */
    static long floorAbove(long databaseMark, long electionTerm) {
        if (databaseMark <= 0 || electionTerm > databaseMark) {
            return 0;
        }
        return databaseMark + 1;
    }

    /** How a run that threw ended. */
    static RunOutcome outcomeOf(Throwable t) {
        if (t instanceof StaleTermException) {
            return RunOutcome.REJECTED_STALE;
        }
        if (t instanceof CommitOutcomeUnknownException) {
            return RunOutcome.COMMIT_UNKNOWN;
        }
        return RunOutcome.FAILED;
    }

    /**
     * What follows a run.
     *
     * @param delayNanos  pause before the next run
     * @param resign      give the term up (PostgreSQL holds a higher one)
     * @param recheckTerm compare the term with the database's mark again before the next run
     */
    record AfterRun(long delayNanos, boolean resign, boolean recheckTerm) {
    }

    /**
     * @param deposed for COMMIT_UNKNOWN: the writer's re-check found a higher term accepted (null: unknown)
     */
    static AfterRun afterRun(RunOutcome outcome, Boolean deposed, long intervalNanos, long idleNanos,
                             long backoffNanos) {
        return switch (outcome) {
            case COMMITTED -> new AfterRun(intervalNanos, false, false);
            case NOTHING_TO_DO -> new AfterRun(idleNanos, false, false);
            case REJECTED_STALE -> new AfterRun(idleNanos, true, true);
            case COMMIT_UNKNOWN -> Boolean.TRUE.equals(deposed)
                    ? new AfterRun(idleNanos, true, true)
                    : new AfterRun(backoffNanos, false, true);
            case FAILED -> new AfterRun(backoffNanos, false, true);
        };
    }
}
