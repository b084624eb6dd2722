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
 * units of work it did (0: nothing to do; the task then waits {@code fenceline.task.idle-interval}):
 *
 * <pre>{@code
 * @FencedLeaderTask
 * long settle(FencedContext ctx) { return ctx.update(PAYMENT).set(STATUS, "SETTLED").where(...).execute(); }
 * }</pre>
 *
 * <p>On the class of a {@link dev.fenceline.task.TaskWork} bean it names that task's resource and election. A
 * {@code TaskWork} bean without it becomes a task too, with the defaults below.
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
}
