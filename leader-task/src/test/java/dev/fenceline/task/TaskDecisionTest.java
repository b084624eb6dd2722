package dev.fenceline.task;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.election.LeadershipState;
import dev.fenceline.fencing.CommitOutcomeUnknownException;
import dev.fenceline.fencing.FenceUnavailableException;
import dev.fenceline.fencing.FencedWorkException;
import dev.fenceline.fencing.FencingToken;
import dev.fenceline.fencing.StaleTermException;
import dev.fenceline.task.TaskDecision.Action;
import dev.fenceline.task.TaskDecision.AfterRun;
import dev.fenceline.task.TaskDecision.CheckTerm;
import dev.fenceline.task.TaskDecision.Facts;
import dev.fenceline.task.TaskDecision.Run;
import dev.fenceline.task.TaskDecision.Stop;
import dev.fenceline.task.TaskDecision.Tenure;
import dev.fenceline.task.TaskDecision.Wait;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The task's decisions, table-driven with an injected clock: each row gives what the election says, what the task
 * checked, the clock, and the expected action.
 */
class TaskDecisionTest {
    static final long NOW = TimeUnit.SECONDS.toNanos(1_000);
    static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
    static final long MAX_WAIT = 1_000 * MS;

    static final long LEASE = 0x3d07a234a2baed11L;
    /** A lease of a coordinator rebuilt from nothing, which issues the old term numbers again. */
    static final long REBUILT_LEASE = 0x2d6fa234a3af7012L;

    static Tenure tenure(long term) {
        return term <= 0 ? Tenure.NONE : new Tenure(term, LEASE);
    }

    static Facts facts(
            boolean stopping, LeadershipState state, long term, boolean valid, long checked, long nextRunAt) {
        return new Facts(stopping, state, tenure(term), valid, tenure(checked), Tenure.NONE, nextRunAt, NOW, MAX_WAIT);
    }

    static Facts resigned(long term, long resignedTerm) {
        return new Facts(
                false,
                LeadershipState.LEADER,
                tenure(term),
                true,
                Tenure.NONE,
                tenure(resignedTerm),
                NOW,
                NOW,
                MAX_WAIT);
    }

    static Stream<Arguments> rows() {
        return Stream.of(
                Arguments.of(
                        "close() stops even a valid leader",
                        facts(true, LeadershipState.LEADER, 7, true, 7, NOW),
                        new Stop()),
                Arguments.of(
                        "a candidate waits",
                        facts(false, LeadershipState.CANDIDATE, 0, false, -1, NOW),
                        new Wait(TaskPhase.CAMPAIGNING, MAX_WAIT, "not leader (CANDIDATE)")),
                Arguments.of(
                        "a follower waits",
                        facts(false, LeadershipState.FOLLOWER, 0, false, 7, NOW),
                        new Wait(TaskPhase.CAMPAIGNING, MAX_WAIT, "not leader (FOLLOWER)")),
                Arguments.of(
                        "a LOST term never runs",
                        facts(false, LeadershipState.LOST, 7, false, 7, NOW),
                        new Wait(TaskPhase.CAMPAIGNING, MAX_WAIT, "not leader (LOST)")),
                Arguments.of(
                        "SUSPECT stops new runs",
                        facts(false, LeadershipState.SUSPECT, 7, false, 7, NOW),
                        new Wait(TaskPhase.SUSPECT, MAX_WAIT, "term 7 not provably held (SUSPECT, validity over)")),
                Arguments.of(
                        "LEADER past its deadline stops new runs (fail closed before the election notices)",
                        facts(false, LeadershipState.LEADER, 7, false, 7, NOW),
                        new Wait(TaskPhase.SUSPECT, MAX_WAIT, "term 7 not provably held (LEADER, validity over)")),
                Arguments.of(
                        "a term just resigned is never run with, though the election still reports it valid",
                        resigned(7, 7),
                        new Wait(TaskPhase.CAMPAIGNING, MAX_WAIT, "resigned term 7")),
                Arguments.of("the next term after a resigned one is checked", resigned(9, 7), new CheckTerm(9)),
                Arguments.of(
                        "a term number resigned before the coordinator was rebuilt, issued again on a new lease,"
                                + " is checked, not ignored",
                        new Facts(
                                false,
                                LeadershipState.LEADER,
                                new Tenure(1, REBUILT_LEASE),
                                true,
                                Tenure.NONE,
                                tenure(1),
                                NOW,
                                NOW,
                                MAX_WAIT),
                        new CheckTerm(1)),
                Arguments.of(
                        "a term number checked before the coordinator was rebuilt, issued again on a new lease,"
                                + " is checked again before it runs",
                        new Facts(
                                false,
                                LeadershipState.LEADER,
                                new Tenure(8, REBUILT_LEASE),
                                true,
                                tenure(8),
                                Tenure.NONE,
                                NOW,
                                NOW,
                                MAX_WAIT),
                        new CheckTerm(8)),
                Arguments.of(
                        "a new term is compared with the database first",
                        facts(false, LeadershipState.LEADER, 8, true, 7, NOW),
                        new CheckTerm(8)),
                Arguments.of(
                        "a checked valid term whose run is due runs",
                        facts(false, LeadershipState.LEADER, 8, true, 8, NOW),
                        new Run(8)),
                Arguments.of(
                        "a run overdue runs",
                        facts(false, LeadershipState.LEADER, 8, true, 8, NOW - 5 * MS),
                        new Run(8)),
                Arguments.of(
                        "a run not yet due waits exactly until it is",
                        facts(false, LeadershipState.LEADER, 8, true, 8, NOW + 250 * MS),
                        new Wait(TaskPhase.LEADING, 250 * MS, "next run not due yet")),
                Arguments.of(
                        "a long pause is cut into bounded waits",
                        facts(false, LeadershipState.LEADER, 8, true, 8, NOW + 60_000 * MS),
                        new Wait(TaskPhase.LEADING, MAX_WAIT, "next run not due yet")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void decidesTheNextStep(String row, Facts facts, Action expected) {
        assertThat(TaskDecision.next(facts)).isEqualTo(expected);
    }

    static Stream<Arguments> termRows() {
        return Stream.of(
                Arguments.of("above the mark", 8, 7, false, true),
                Arguments.of("first term on an empty database", 1, 0, false, true),
                Arguments.of("equal to the mark, presented by this task (it advanced the mark)", 7, 7, true, true),
                Arguments.of("equal to the mark, presented by someone else: a term issued twice", 7, 7, false, false),
                Arguments.of("below the mark: the coordinator lost its history", 1, 7, false, false),
                Arguments.of("below the mark even if presented once", 3, 7, true, false));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("termRows")
    void aWonTermMayWriteOnlyAboveTheDatabaseMark(String row, long term, long mark, boolean presented, boolean usable) {
        assertThat(TaskDecision.termUsable(term, mark, presented)).isEqualTo(usable);
    }

    static Stream<Arguments> floorRows() {
        return Stream.of(
                Arguments.of("empty database: nothing to raise", 0, 0, 0),
                Arguments.of("election ahead of the database", 7, 9, 0),
                Arguments.of("election one above: next term is above anyway", 7, 8, 0),
                Arguments.of("election equal to the mark", 7, 7, 8),
                Arguments.of("etcd rebuilt from nothing", 7, 0, 8),
                Arguments.of("etcd behind", 1_000, 3, 1_001));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("floorRows")
    void theTermFloorIsRaisedJustAboveTheDatabaseMarkWhenTheElectionIsBehind(
            String row, long mark, long electionTerm, long floor) {
        assertThat(TaskDecision.floorAbove(mark, electionTerm)).isEqualTo(floor);
    }

    static final FencingToken TOKEN = FencingToken.of("r", 3, "a");

    static Stream<Arguments> outcomeRows() {
        return Stream.of(
                Arguments.of(new StaleTermException("r", 3, 4, null, true, null), RunOutcome.REJECTED_STALE),
                Arguments.of(new CommitOutcomeUnknownException(TOKEN, null, null, null), RunOutcome.COMMIT_UNKNOWN),
                Arguments.of(new FenceUnavailableException("down", null), RunOutcome.FAILED),
                Arguments.of(new FencedWorkException(new java.io.IOException("x")), RunOutcome.FAILED),
                Arguments.of(new IllegalStateException("bug"), RunOutcome.FAILED));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("outcomeRows")
    void classifiesWhatARunThrew(Throwable thrown, RunOutcome outcome) {
        assertThat(TaskDecision.outcomeOf(thrown)).isEqualTo(outcome);
    }

    static Stream<Arguments> afterRows() {
        long interval = 10, idle = 100, backoff = 1_000;
        return Stream.of(
                Arguments.of(RunOutcome.COMMITTED, null, new AfterRun(interval, false, false)),
                Arguments.of(RunOutcome.NOTHING_TO_DO, null, new AfterRun(idle, false, false)),
                Arguments.of(RunOutcome.REJECTED_STALE, null, new AfterRun(idle, true, true)),
                Arguments.of(RunOutcome.COMMIT_UNKNOWN, Boolean.TRUE, new AfterRun(idle, true, true)),
                Arguments.of(RunOutcome.COMMIT_UNKNOWN, Boolean.FALSE, new AfterRun(backoff, false, true)),
                Arguments.of(RunOutcome.COMMIT_UNKNOWN, null, new AfterRun(backoff, false, true)),
                Arguments.of(RunOutcome.FAILED, null, new AfterRun(backoff, false, true)));
    }

    @ParameterizedTest(name = "{0} (deposed {1})")
    @MethodSource("afterRows")
    void aRejectedOrDeposedRunResignsAndAFailedOneBacksOff(RunOutcome outcome, Boolean deposed, AfterRun expected) {
        assertThat(TaskDecision.afterRun(outcome, deposed, 10, 100, 1_000)).isEqualTo(expected);
    }

    @Test
    void theWarmStartRehearsalTakesEveryDecisionOnceAndComparesTenures() {
        var decided = TaskDecision.rehearse();
        assertThat(decided).filteredOn(Stop.class::isInstance).hasSize(1);
        assertThat(decided).filteredOn(CheckTerm.class::isInstance).hasSize(1);
        assertThat(decided).filteredOn(Run.class::isInstance).hasSize(1);
        assertThat(decided)
                .filteredOn(Wait.class::isInstance)
                .extracting(w -> ((Wait) w).phase())
                .containsExactlyInAnyOrder(
                        TaskPhase.CAMPAIGNING, TaskPhase.CAMPAIGNING, TaskPhase.SUSPECT, TaskPhase.LEADING);
        assertThat(decided).filteredOn(AfterRun.class::isInstance).hasSize(RunOutcome.values().length);
    }
}
