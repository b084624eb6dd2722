package dev.fenceline.task;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * When a {@link LeaderTask}'s runs start while it leads: after a delay from the previous run's end (the default), at a
 * fixed rate, or at the times a function of the previous run gives (a cron expression, for instance).
 *
 * <p>Under every schedule: runs start only while leading (a term not held or not valid starts none), one at a time
 * on the task's one thread, and a schedule that fell behind (a run longer than the period, a term that was SUSPECT
 * for a while) starts ONE run as soon as it can, however many starts it missed, never a burst. The pauses of
 * {@link LeaderTaskConfig}:
 *
 * <table>
 *   <caption>Pause after a run, by outcome and schedule</caption>
 *   <tr><th>run ended</th><th>{@link #fixedDelay()}</th><th>{@link #fixedDelay(Duration) fixedDelay(d)}</th>
 *       <th>{@link #fixedRate(Duration) fixedRate(p)}</th><th>{@link #of(NextStart) of(f)}</th></tr>
 *   <tr><td>COMMITTED</td><td>interval</td><td>d</td><td rowspan="2">until p after its start (at once if
 *       passed)</td><td rowspan="2">until f(start, end) (at once if passed)</td></tr>
 *   <tr><td>NOTHING_TO_DO</td><td>idleInterval</td><td>d</td></tr>
 *   <tr><td>FAILED, COMMIT_UNKNOWN</td><td colspan="4">failureBackoff: the run is retried then; starts missed
 *       meanwhile are that one retry</td></tr>
 *   <tr><td>REJECTED_STALE, deposed</td><td colspan="2">idleInterval, counted in the next term</td>
 *       <td colspan="2">the term is resigned; the schedule starts afresh in the next one</td></tr>
 * </table>
 *
 * <p>The first run of a won term: under fixed delay, when the last pause ends (at once the first time); under fixed
 * rate, at once, or p after this process's last start if that is later; under a function, at f(won, won), where
 * won is when the term was found usable, so a failover does not start a run the schedule did not ask for.
 * {@code interval} and {@code idleInterval} are used only by {@link #fixedDelay()}.
 */
public final class TaskSchedule {
    /** The longest delay or period. */
    static final Duration MAX = Duration.ofDays(366);
    /**
     * A delay that stands for "no further run": beyond any schedule, and small enough that adding it to a monotonic
     * reading and subtracting that reading again gives it back (no overflow in the difference).
     */
    static final long NEVER_NANOS = Long.MAX_VALUE / 4;

    /** The next start of a {@link #of(String, NextStart)} schedule. */
    @FunctionalInterface
    public interface NextStart {
        /**
         * When the next run is due.
         *
         * @param lastStart when the term's last run started (never before it was due); before the term's first run,
         *                  when the term was won
         * @param lastEnd   when that run ended; before the term's first run, when the term was won
         * @return when the next run is due (in the past: at once), or null for no further run in this term
         */
        @Nullable
        Instant next(Instant lastStart, Instant lastEnd);
    }

    private enum Kind {
        CONFIGURED_DELAYS,
        FIXED_DELAY,
        FIXED_RATE,
        FUNCTION
    }

    private static final TaskSchedule CONFIGURED_DELAYS =
            new TaskSchedule(Kind.CONFIGURED_DELAYS, null, null, "fixedDelay(interval, idleInterval)");

    private final Kind kind;
    /** Set for FIXED_DELAY and FIXED_RATE only. */
    private final @Nullable Duration every;
    /** Set for FUNCTION only. */
    private final @Nullable NextStart next;

    private final String description;

    private TaskSchedule(Kind kind, @Nullable Duration every, @Nullable NextStart next, String description) {
        this.kind = kind;
        this.every = every;
        this.next = next;
        this.description = description;
    }

    /**
     * The default: {@link LeaderTaskConfig#interval()} after a run that did work (0: drain a backlog at once),
     * {@link LeaderTaskConfig#idleInterval()} after one that found nothing.
     */
    public static TaskSchedule fixedDelay() {
        return CONFIGURED_DELAYS;
    }

    /**
     * {@code delay} after the end of every run that did work or found nothing (0 to 366 days).
     *
     * @throws IllegalArgumentException naming the limit and the value
     */
    public static TaskSchedule fixedDelay(Duration delay) {
        check("fixedDelay", delay, Duration.ZERO);
        return new TaskSchedule(Kind.FIXED_DELAY, delay, null, "fixedDelay(" + delay + ")");
    }

    /**
     * A run every {@code period} (1 ms to 366 days), counted from the previous run's start.
     *
     * @throws IllegalArgumentException naming the limit and the value
     */
    public static TaskSchedule fixedRate(Duration period) {
        check("fixedRate", period, Duration.ofMillis(1));
        return new TaskSchedule(Kind.FIXED_RATE, period, null, "fixedRate(" + period + ")");
    }

    /** The runs at the times {@code next} gives. */
    public static TaskSchedule of(NextStart next) {
        return of("function", next);
    }

    /**
     * The runs at the times {@code next} gives; {@code description} names it in logs and {@link #toString()}, e.g.
     * {@code of("cron 0 0 2 * * *", (start, end) -> ...)}.
     */
    public static TaskSchedule of(String description, NextStart next) {
        return new TaskSchedule(
                Kind.FUNCTION,
                null,
                Objects.requireNonNull(next, "next"),
                Objects.requireNonNull(description, "description"));
    }

    @Override
    public String toString() {
        return description;
    }

    private static void check(String name, @Nullable Duration d, Duration min) {
        if (d == null || d.compareTo(min) < 0 || d.compareTo(MAX) > 0) {
            throw new IllegalArgumentException(name + " must be between " + min.toMillis() + " ms and 366 days, was "
                    + (d == null ? "null" : d.toMillis() + " ms"));
        }
    }

    // ---- the schedule's decisions: pure, every time passed in (monotonic nanos for delays, instants for functions)

    /**
     * When the next run is due.
     *
     * @param atNanos on the task's monotonic clock
     * @param wall    the instant a function schedule asked for (null for the others): a run started before it (the
     *                wall clock slower than the monotonic one) counts as started then, so it is not asked for again
     * @param failed  what the function threw (the run is then due after failureBackoff), else null
     */
    record Due(
            long atNanos, @Nullable Instant wall, @Nullable RuntimeException failed) {
        Due(long atNanos, @Nullable Instant wall) {
            this(atNanos, wall, null);
        }
    }

    /**
     * The first run of a newly won term.
     *
     * @param keptAtNanos     when the next run was due before (fixed delay keeps it)
     * @param lastStartNanos  when this process last started a run, in any term; null if never
     * @param backoffNanos    failureBackoff: when a function throws, the run is due this long from now
     */
    Due firstInTerm(
            long keptAtNanos, long nowNanos, Instant nowWall, @Nullable Long lastStartNanos, long backoffNanos) {
        return switch (kind) {
            case CONFIGURED_DELAYS, FIXED_DELAY -> new Due(keptAtNanos, null);
            case FIXED_RATE ->
                lastStartNanos == null || lastStartNanos + everyNanos() - nowNanos <= 0
                        ? new Due(nowNanos, null)
                        : new Due(lastStartNanos + everyNanos(), null);
            case FUNCTION -> ask(nowWall, nowWall, nowNanos, nowWall, backoffNanos);
        };
    }

    /**
     * After a run that started at {@code startNanos} and ended at {@code endNanos}.
     *
     * @param after     what {@link TaskDecision#afterRun} decided from the outcome, with the configured delays
     * @param dueThen   when the run was due
     * @param startWall when it started on the wall clock
     * @param endWall   when it ended on the wall clock
     * @param backoffNanos failureBackoff: when a function throws, the run is due this long after the end
     */
    Due afterRun(
            RunOutcome outcome,
            TaskDecision.AfterRun after,
            long startNanos,
            long endNanos,
            Due dueThen,
            Instant startWall,
            Instant endWall,
            long backoffNanos) {
        boolean ran = outcome == RunOutcome.COMMITTED || outcome == RunOutcome.NOTHING_TO_DO;
        if (kind == Kind.CONFIGURED_DELAYS || !ran) {
            return new Due(endNanos + after.delayNanos(), null); // failureBackoff, or idleInterval after a resign
        }
        return switch (kind) {
            case FIXED_DELAY -> new Due(endNanos + everyNanos(), null);
            // due one period after the start; already passed (the run was longer): at once, once
            case FIXED_RATE ->
                startNanos + everyNanos() - endNanos <= 0
                        ? new Due(endNanos, null)
                        : new Due(startNanos + everyNanos(), null);
            // a run the monotonic clock started a little before the wall clock reached its due time counts as
            // started then: asked with its real start, a cron schedule would give that same due time again
            case FUNCTION -> {
                Instant dueWall = dueThen.wall();
                Instant lastStart = dueWall != null && dueWall.isAfter(startWall) ? dueWall : startWall;
                yield ask(lastStart, endWall, endNanos, endWall, backoffNanos);
            }
            case CONFIGURED_DELAYS -> throw new AssertionError(kind);
        };
    }

    /** Asks the function; one that throws makes the run due after the backoff, and says what it threw. */
    private Due ask(Instant lastStart, Instant lastEnd, long nowNanos, Instant nowWall, long backoffNanos) {
        Instant due;
        try {
            due = Objects.requireNonNull(next, "a function schedule without its function")
                    .next(lastStart, lastEnd);
        } catch (RuntimeException e) {
            return new Due(nowNanos + backoffNanos, null, e);
        }
        return asked(due, nowNanos, nowWall);
    }

    /** A function's answer on the monotonic clock: in the past is now (at once, once); null is never. */
    /** The delay or period of a FIXED_DELAY or FIXED_RATE schedule (the only kinds that ask for it). */
    private long everyNanos() {
        return Objects.requireNonNull(every, "a fixed schedule without its delay")
                .toNanos();
    }

    private static Due asked(@Nullable Instant due, long nowNanos, Instant nowWall) {
        if (due == null) {
            return new Due(nowNanos + NEVER_NANOS, null);
        }
        if (!due.isAfter(nowWall)) {
            return new Due(nowNanos, due);
        }
        Duration until = Duration.between(nowWall, due);
        long nanos = until.compareTo(Duration.ofNanos(NEVER_NANOS)) >= 0 ? NEVER_NANOS : until.toNanos();
        return new Due(nowNanos + nanos, due);
    }
}
