package dev.fenceline.task;

import dev.fenceline.fencing.FencedContext;
import dev.fenceline.fencing.WriteDescription;
import org.jspecify.annotations.Nullable;

/**
 * The unit of work a {@link LeaderTask} runs while leader: {@link #plan} outside any transaction (read-only, e.g.
 * pick the next batch), then {@link #run} inside ONE fenced transaction at the leadership's term, which PostgreSQL
 * commits or rejects as a whole.
 *
 * @param <P> the plan handed from {@link #plan} to {@link #run}
 */
public interface TaskWork<P> {
    /** What to do next, or null when there is nothing to do (no transaction is opened then). */
    @Nullable
    P plan(RunContext run) throws Exception;

    /**
     * Does the planned work on {@code ctx} (inside the fenced transaction; do not commit yourself).
     *
     * @return how many units of work were done (rows, payments ...); 0 counts as NOTHING_TO_DO although the
     *         transaction commits
     */
    long run(FencedContext ctx, P plan) throws Exception;

    /** What the audit row records if this plan's transaction is rejected (null: no description). */
    default @Nullable WriteDescription describe(P plan) {
        return null;
    }

    /** Work that needs no separate plan: each run is one fenced transaction of {@code work}. */
    static TaskWork<Boolean> of(Simple work) {
        if (work == null) {
            throw new NullPointerException("work");
        }
        return new TaskWork<>() {
            @Override
            public Boolean plan(RunContext run) {
                return Boolean.TRUE;
            }

            @Override
            public long run(FencedContext ctx, Boolean plan) throws Exception {
                return work.run(ctx);
            }
        };
    }

    /** The body of {@link #of(Simple)}. */
    @FunctionalInterface
    interface Simple {
        /** Returns how many units of work were done; 0 means there was nothing to do. */
        long run(FencedContext ctx) throws Exception;
    }
}
