package dev.fenceline.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Makes a method a {@link dev.fenceline.task.LeaderTask}: it runs repeatedly, only while this instance is the leader,
 * each run ONE fenced transaction at the leadership's term that PostgreSQL commits or rejects as a whole. The task
 * starts with the application context and hands over (finishes the current run, then resigns) when it closes.
 *
 * <p>The method takes a {@link dev.fenceline.fencing.FencedContext} and returns {@code long} or {@code int}: how many
 * units of work it did (0: nothing to do; under the default schedule the task then waits
 * {@code fenceline.task.idle-interval}):
 *
 * <pre>{@code
 * @FencedLeaderTask
 * long settle(FencedContext ctx) { return ctx.update(PAYMENT).set(STATUS, "SETTLED").where(...).execute(); }
 * }</pre>
 *
 * <p>On the class of a {@link dev.fenceline.task.TaskWork} bean it names that task's resource, election and schedule.
 * A {@code TaskWork} bean without it becomes a task too, with the defaults below.
 *
 * <p>When runs start while leading ({@link dev.fenceline.task.TaskSchedule}): by default after
 * {@code fenceline.task.interval} (a run that did work) or {@code fenceline.task.idle-interval} (one that found
 * nothing); or set at most one of {@link #fixedDelay()}, {@link #fixedRate()} and {@link #cron()}. Their values may be
 * {@code ${...}} placeholders; a bad value fails start-up naming the task, the attribute and the value. A failed run is
 * retried after {@code fenceline.task.failure-backoff} under every schedule.
 */
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface FencedLeaderTask {
    /** The fenced resource; default {@code fenceline.resource} (itself defaulting to {@code fenceline.election.name}). */
    String resource() default "";

    /**
     * The election to campaign in; default {@code fenceline.election.name} for a task on the default resource, else
     * the task's resource name. Two tasks of one application cannot share an election.
     */
    String election() default "";

    /**
     * Start each run this long after the previous run's end, whether it did work or found nothing: an ISO-8601
     * duration ({@code PT30S}) or Spring's form ({@code 30s}, {@code 500ms}, {@code 5m}; a bare number is
     * milliseconds); 0 to 366 days.
     */
    String fixedDelay() default "";

    /**
     * Start a run every this long, counted from the previous run's start (same forms; 1 ms to 366 days). Starts missed
     * by a longer run are one run at once, not a burst. A won term's first run is at once, or one period after this
     * instance's last start if that is later.
     */
    String fixedRate() default "";

    /**
     * Start runs at the times of this cron expression (Spring's {@code CronExpression}: six fields with seconds, or a
     * macro such as {@code @hourly}). A won term's first run waits for the next time; times missed by a longer run are
     * one run at once.
     */
    String cron() default "";

    /** The time zone of {@link #cron()} (a {@code ZoneId}); default the server's, as Spring's {@code @Scheduled}. */
    String zone() default "";
}
