package dev.fenceline.task;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.task.TaskDecision.AfterRun;
import dev.fenceline.task.TaskSchedule.Due;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * When the next run is due under each schedule, table-driven on an injected clock (monotonic nanoseconds and a wall
 * instant passed in; nothing sleeps): each row gives the schedule, how the last run ended, when it started and ended,
 * and when the next one is due.
 */
class TaskScheduleTest {
    static final long S = TimeUnit.SECONDS.toNanos(1);
    static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
    /** The monotonic clock's reading at wall time {@link #T0}: an arbitrary origin, negative like nanoTime's may be. */
    static final long BASE = -5_000 * S;

    static final Instant T0 = Instant.parse("2026-12-03T02:00:00Z");

    // the configured pauses, as LeaderTaskConfig would give them
    static final long INTERVAL = 10 * MS;
    static final long IDLE = 1 * S;
    static final long BACKOFF = 5 * S;

    /** Every 10 s on the wall clock's grid, like the cron expression {@code *}{@code /10 * * * * *}. */
    static final TaskSchedule EVERY_10S_ON_THE_GRID = TaskSchedule.of("every 10 s", (start, end) -> {
        long next = (start.getEpochSecond() / 10 + 1) * 10;
        return Instant.ofEpochSecond(next);
    });

    static long at(double seconds) {
        return BASE + Math.round(seconds * S);
    }

    static Instant wall(double seconds) {
        return T0.plusNanos(Math.round(seconds * S));
    }

    static AfterRun after(RunOutcome outcome) {
        return TaskDecision.afterRun(outcome, null, INTERVAL, IDLE, BACKOFF);
    }

    /** The run started at {@code start} s and ended at {@code end} s after T0, due at {@code start}. */
    static Due afterRun(TaskSchedule s, RunOutcome outcome, double start, double end) {
        return s.afterRun(
                outcome, after(outcome), at(start), at(end), new Due(at(start), null), wall(start), wall(end), BACKOFF);
    }

    static Stream<Arguments> afterRunRows() {
        TaskSchedule delay30 = TaskSchedule.fixedDelay(Duration.ofSeconds(30));
        TaskSchedule rate10 = TaskSchedule.fixedRate(Duration.ofSeconds(10));
        return Stream.of(
                // the default: today's pauses, from the run's end
                Arguments.of(
                        "default, did work: interval",
                        TaskSchedule.fixedDelay(),
                        RunOutcome.COMMITTED,
                        0,
                        2,
                        at(2) + INTERVAL),
                Arguments.of(
                        "default, found nothing: idleInterval",
                        TaskSchedule.fixedDelay(),
                        RunOutcome.NOTHING_TO_DO,
                        0,
                        2,
                        at(2) + IDLE),
                Arguments.of(
                        "default, failed: failureBackoff",
                        TaskSchedule.fixedDelay(),
                        RunOutcome.FAILED,
                        0,
                        2,
                        at(2) + BACKOFF),
                Arguments.of(
                        "default, rejected: idleInterval",
                        TaskSchedule.fixedDelay(),
                        RunOutcome.REJECTED_STALE,
                        0,
                        2,
                        at(2) + IDLE),
                // fixedDelay(d): d after every run that ran, whatever it found
                Arguments.of("fixedDelay(30s), did work", delay30, RunOutcome.COMMITTED, 0, 2, at(32)),
                Arguments.of(
                        "fixedDelay(30s), found nothing: not idleInterval",
                        delay30,
                        RunOutcome.NOTHING_TO_DO,
                        0,
                        2,
                        at(32)),
                Arguments.of(
                        "fixedDelay(30s), failed: failureBackoff", delay30, RunOutcome.FAILED, 0, 2, at(2) + BACKOFF),
                Arguments.of(
                        "fixedDelay(30s), commit unknown: failureBackoff",
                        delay30,
                        RunOutcome.COMMIT_UNKNOWN,
                        0,
                        2,
                        at(2) + BACKOFF),
                Arguments.of(
                        "fixedDelay(30s), rejected: idleInterval",
                        delay30,
                        RunOutcome.REJECTED_STALE,
                        0,
                        2,
                        at(2) + IDLE),
                // fixedRate(p): p after the start
                Arguments.of("fixedRate(10s), did work", rate10, RunOutcome.COMMITTED, 0, 2, at(10)),
                Arguments.of(
                        "fixedRate(10s), found nothing: not idleInterval",
                        rate10,
                        RunOutcome.NOTHING_TO_DO,
                        0,
                        2,
                        at(10)),
                Arguments.of(
                        "fixedRate(10s), a run longer than the period: at once, once",
                        rate10,
                        RunOutcome.COMMITTED,
                        0,
                        25,
                        at(25)),
                Arguments.of(
                        "fixedRate(10s), failed: retried after failureBackoff",
                        rate10,
                        RunOutcome.FAILED,
                        0,
                        2,
                        at(2) + BACKOFF),
                Arguments.of(
                        "fixedRate(10s), failed after a long run: failureBackoff still",
                        rate10,
                        RunOutcome.FAILED,
                        0,
                        25,
                        at(25) + BACKOFF),
                // a function (cron): what it answers for the run's start
                Arguments.of(
                        "function, did work: the next grid time",
                        EVERY_10S_ON_THE_GRID,
                        RunOutcome.COMMITTED,
                        0.003,
                        1,
                        at(10)),
                Arguments.of(
                        "function, found nothing: not idleInterval",
                        EVERY_10S_ON_THE_GRID,
                        RunOutcome.NOTHING_TO_DO,
                        0.003,
                        1,
                        at(10)),
                Arguments.of(
                        "function, a run past the next grid time: at once, once",
                        EVERY_10S_ON_THE_GRID,
                        RunOutcome.COMMITTED,
                        0.003,
                        35,
                        at(35)),
                Arguments.of(
                        "function, failed: retried after failureBackoff",
                        EVERY_10S_ON_THE_GRID,
                        RunOutcome.FAILED,
                        0.003,
                        1,
                        at(1) + BACKOFF));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("afterRunRows")
    void theNextRunIsDueWhenTheScheduleSays(
            String row, TaskSchedule schedule, RunOutcome outcome, double start, double end, long dueAt) {
        assertThat(afterRun(schedule, outcome, start, end).atNanos()).isEqualTo(dueAt);
    }

    static Stream<Arguments> firstInTermRows() {
        long kept = at(7);
        TaskSchedule rate10 = TaskSchedule.fixedRate(Duration.ofSeconds(10));
        return Stream.of(
                Arguments.of("default: the pause that was running goes on", TaskSchedule.fixedDelay(), null, kept),
                Arguments.of(
                        "fixedDelay(30s): the same", TaskSchedule.fixedDelay(Duration.ofSeconds(30)), at(-1), kept),
                Arguments.of("fixedRate, never ran here: at once", rate10, null, at(3)),
                Arguments.of("fixedRate, ran here 1 s before winning: a period after that run", rate10, at(2), at(12)),
                Arguments.of("fixedRate, ran here long before: at once", rate10, at(-60), at(3)),
                Arguments.of(
                        "function: its next time after winning, not at once", EVERY_10S_ON_THE_GRID, at(2), at(10)));
    }

    /** The term is won at 3 s after T0. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("firstInTermRows")
    void theFirstRunOfAWonTerm(String row, TaskSchedule schedule, Long lastStart, long dueAt) {
        assertThat(schedule.firstInTerm(at(7), at(3), wall(3), lastStart, BACKOFF)
                        .atNanos())
                .isEqualTo(dueAt);
    }

    @Test
    void aFunctionWithoutAnotherTimeStartsNoFurtherRun() {
        TaskSchedule once = TaskSchedule.of("once", (start, end) -> null);
        Due due = afterRun(once, RunOutcome.COMMITTED, 0, 1);
        assertThat(due.atNanos() - at(1)).isEqualTo(TaskSchedule.NEVER_NANOS);
        assertThat(TaskDecision.next(new TaskDecision.Facts(
                        false,
                        dev.fenceline.election.LeadershipState.LEADER,
                        new TaskDecision.Tenure(3, 1),
                        true,
                        new TaskDecision.Tenure(3, 1),
                        TaskDecision.Tenure.NONE,
                        due.atNanos(),
                        at(1_000_000),
                        S)))
                .as("a million seconds later it still waits")
                .isInstanceOf(TaskDecision.Wait.class);
    }

    @Test
    void aFunctionThatThrowsMakesTheNextRunDueAfterFailureBackoffAndSaysWhatItThrew() {
        IllegalStateException thrown = new IllegalStateException("no next time");
        TaskSchedule broken = TaskSchedule.of("broken", (start, end) -> {
            throw thrown;
        });
        Due after = afterRun(broken, RunOutcome.COMMITTED, 0, 1);
        assertThat(after.atNanos()).isEqualTo(at(1) + BACKOFF);
        assertThat(after.failed()).isSameAs(thrown);
        Due first = broken.firstInTerm(at(7), at(3), wall(3), null, BACKOFF);
        assertThat(first.atNanos()).isEqualTo(at(3) + BACKOFF);
        assertThat(first.failed()).isSameAs(thrown);
    }

    @Test
    void aFunctionAskingForATimeYearsAheadWaitsWithoutOverflow() {
        TaskSchedule far = TaskSchedule.of("far", (start, end) -> start.plus(Duration.ofDays(365 * 500)));
        assertThat(afterRun(far, RunOutcome.COMMITTED, 0, 1).atNanos() - at(1)).isEqualTo(TaskSchedule.NEVER_NANOS);
    }

    @Test
    void aRunStartedJustBeforeItsWallClockDueTimeIsNotAskedForAgain() {
        // due at 10 s; the monotonic wait ended when the wall clock still read 9.998 s (it runs a little slow)
        Due due = new Due(at(10), wall(10));
        Due next = EVERY_10S_ON_THE_GRID.afterRun(
                RunOutcome.COMMITTED,
                after(RunOutcome.COMMITTED),
                at(10),
                at(10.5),
                due,
                wall(9.998),
                wall(10.498),
                BACKOFF);
        assertThat(next.atNanos()).isEqualTo(at(10.5) + Math.round(9.502 * S));
        assertThat(next.wall()).isEqualTo(wall(20));
    }

    /**
     * Runs a schedule on the pure functions as the task's one thread would: each run starts when it is due or when the
     * previous one ended, whichever is later; returns the starts, in seconds after T0.
     */
    static List<Double> starts(TaskSchedule schedule, double... durations) {
        List<Double> starts = new ArrayList<>();
        Due due = schedule.firstInTerm(at(0), at(0), wall(0), null, BACKOFF);
        double end = 0;
        for (double d : durations) {
            double start = Math.max(end, (due.atNanos() - BASE) / (double) S);
            starts.add(start);
            end = start + d;
            due = schedule.afterRun(
                    RunOutcome.COMMITTED,
                    after(RunOutcome.COMMITTED),
                    at(start),
                    at(end),
                    due,
                    wall(start),
                    wall(end),
                    BACKOFF);
        }
        return starts;
    }

    @Test
    void aFixedRateThatFellBehindRunsOnceAtOnceNeverABurstNorTwoAtATime() {
        // the second run takes 35 s: the starts at 20, 30 and 40 s are missed, and become ONE run when it ends
        assertThat(starts(TaskSchedule.fixedRate(Duration.ofSeconds(10)), 1, 35, 1, 1))
                .containsExactly(0.0, 10.0, 45.0, 55.0);
    }

    @Test
    void aCronScheduleThatFellBehindRunsOnceAtOnceThenBackOnItsGrid() {
        // the term is won at 0 (a grid time): the first run is at the next one, 10 s; the second run takes 35 s
        assertThat(starts(EVERY_10S_ON_THE_GRID, 1, 35, 1, 1)).containsExactly(10.0, 20.0, 55.0, 60.0);
    }

    @Test
    void theDefaultScheduleIsTodaysFixedDelay() {
        assertThat(starts(TaskSchedule.fixedDelay(), 1, 1, 1)).containsExactly(0.0, 1.01, 2.02);
        assertThat(TaskSchedule.fixedDelay()).hasToString("fixedDelay(interval, idleInterval)");
        assertThat(TaskSchedule.fixedRate(Duration.ofSeconds(10))).hasToString("fixedRate(PT10S)");
    }
}
