package dev.fenceline.task;

import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.fencing.CommitOutcomeUnknownException;
import dev.fenceline.fencing.StaleTermException;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The task's decisions as pure functions of what the election, PostgreSQL and the clock said (no I/O, no clock
 * reads, no threads; table-tested in TaskDecisionTest). The loop in {@link TaskLoop} reads, calls these, and
 * carries the result out.
 */
final class TaskDecision {
    private TaskDecision() {}

    /**
     * One won leadership: its term and the lease it was won on. A term number alone does not name a leadership: a
     * coordinator rebuilt from nothing issues term 1, 2, ... again, but never on a lease of the old cluster.
     */
    record Tenure(long term, long leaseId) {
        static final Tenure NONE = new Tenure(0, 0);

        /** {@code l}'s tenure, {@link #NONE} for no leadership. */
        static Tenure of(@Nullable Leadership l) {
            return l == null ? NONE : new Tenure(l.term(), l.leaseId());
        }
    }

    /**
     * Everything {@link #next} depends on.
     *
     * @param stopping        close() was called
     * @param state           the election's state
     * @param held            the election's leadership, {@link Tenure#NONE} when none
     * @param valid           that leadership is valid right now
     * @param checked         the leadership last found above the database's mark ({@link Tenure#NONE}: none)
     * @param resigned        the leadership this task last resigned ({@link Tenure#NONE}: none); the election may
     *                        report it for a moment
     * @param nextRunAtNanos  earliest start of the next run (monotonic clock)
     * @param nowNanos        the monotonic clock now
     * @param maxWaitNanos    longest wait before looking again without being woken
     */
    record Facts(
            boolean stopping,
            LeadershipState state,
            Tenure held,
            boolean valid,
            Tenure checked,
            Tenure resigned,
            long nextRunAtNanos,
            long nowNanos,
            long maxWaitNanos) {
        long term() {
            return held.term();
        }
    }

    sealed interface Action {}

    /** close() was called: no new run; hand over. */
    record Stop() implements Action {}

    /** No run now: be in {@code phase}, look again after {@code nanos} or when woken. */
    record Wait(TaskPhase phase, long nanos, String why) implements Action {}

    /** A term not compared with the database yet: read the mark before its first run. */
    record CheckTerm(long term) implements Action {}

    /** Run the work once at {@code term}. */
    record Run(long term) implements Action {}

    static Action next(Facts f) {
        if (f.stopping()) {
            return new Stop();
        }
        if (f.term() <= 0 || f.state() == LeadershipState.LOST || f.state() == LeadershipState.CLOSED) {
            return new Wait(TaskPhase.CAMPAIGNING, f.maxWaitNanos(), "not leader (" + f.state() + ")");
        }
        if (f.held().equals(f.resigned())) {
            return new Wait(TaskPhase.CAMPAIGNING, f.maxWaitNanos(), "resigned term " + f.term());
        }
        if (f.state() != LeadershipState.LEADER || !f.valid()) {
            // SUSPECT, or LEADER whose deadline passed before the election noticed: no new run (fail closed)
            return new Wait(
                    TaskPhase.SUSPECT,
                    f.maxWaitNanos(),
                    "term " + f.term() + " not provably held (" + f.state() + (f.valid() ? "" : ", validity over")
                            + ")");
        }
        if (!f.held().equals(f.checked())) {
            return new CheckTerm(f.term());
        }
        long untilRun = f.nextRunAtNanos() - f.nowNanos();
        if (untilRun > 0) {
            return new Wait(TaskPhase.LEADING, Math.min(untilRun, f.maxWaitNanos()), "next run not due yet");
        }
        return new Run(f.term());
    }

    /**
     * Takes every branch of {@link #next} and {@link #afterRun} once, with made-up facts, and returns the actions
     * decided (pure: nothing is read or changed). Part of the warm start: the first comparison of two records in a
     * JVM bootstraps their {@code equals} (about 20 ms measured here, see docs/benchmarks.md), and without a rehearsal
     * that first comparison is the one made right after winning.
     */
    static List<Object> rehearse() {
        Tenure won = new Tenure(2, 7);
        Tenure earlier = new Tenure(1, 7);
        long now = 1_000;
        List<Object> decided = new ArrayList<>();
        decided.add(next(new Facts(true, LeadershipState.LEADER, won, true, won, earlier, now, now, 1)));
        decided.add(next(new Facts(
                false, LeadershipState.CANDIDATE, Tenure.NONE, false, Tenure.NONE, Tenure.NONE, now, now, 1)));
        decided.add(next(new Facts(false, LeadershipState.LEADER, won, true, Tenure.NONE, won, now, now, 1)));
        decided.add(next(new Facts(false, LeadershipState.SUSPECT, won, true, won, earlier, now, now, 1)));
        decided.add(next(new Facts(false, LeadershipState.LEADER, won, true, Tenure.NONE, earlier, now, now, 1)));
        decided.add(next(new Facts(false, LeadershipState.LEADER, won, true, won, earlier, now + 5, now, 1)));
        decided.add(next(new Facts(false, LeadershipState.LEADER, won, true, won, earlier, now, now, 1)));
        for (RunOutcome outcome : RunOutcome.values()) {
            decided.add(afterRun(outcome, Boolean.TRUE, 1, 1, 1));
        }
        decided.add(won.hashCode() == earlier.hashCode() ? won : earlier);
        return decided;
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
    record AfterRun(long delayNanos, boolean resign, boolean recheckTerm) {}

    /**
     * @param deposed for COMMIT_UNKNOWN: the writer's re-check found a higher term accepted (null: unknown)
     */
    static AfterRun afterRun(
            RunOutcome outcome, @Nullable Boolean deposed, long intervalNanos, long idleNanos, long backoffNanos) {
        return switch (outcome) {
            case COMMITTED -> new AfterRun(intervalNanos, false, false);
            case NOTHING_TO_DO -> new AfterRun(idleNanos, false, false);
            case REJECTED_STALE -> new AfterRun(idleNanos, true, true);
            case COMMIT_UNKNOWN ->
                Boolean.TRUE.equals(deposed)
                        ? new AfterRun(idleNanos, true, true)
                        : new AfterRun(backoffNanos, false, true);
            case FAILED -> new AfterRun(backoffNanos, false, true);
        };
    }
}
