package dev.fenceline.election.internal;

import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Marks the threads on which blocking in Fenceline would deadlock or stall elections: the session's own
 * threads (a listener added with a direct executor runs there) and any thread while it runs a listener
 * callback or a dependent stage of a user-visible future. {@code close()} called there does not wait.
 */
final class CallbackContext {
    private static final ThreadLocal<Boolean> INSIDE = ThreadLocal.withInitial(() -> false);

    private CallbackContext() {}

    static boolean inside() {
        return INSIDE.get();
    }

    /** Runs {@code r} marked as a callback (restores the previous mark: callbacks may nest). */
    static void run(Runnable r) {
        boolean before = INSIDE.get();
        INSIDE.set(true);
        try {
            r.run();
        } finally {
            INSIDE.set(before);
        }
    }

    /** Marks every task of a session-owned thread. */
    static Runnable marked(Runnable r) {
        return () -> {
            INSIDE.set(true);
            r.run();
        };
    }

    /**
     * Completes a user-visible action on {@code executor} (the listener executor), so stages the application
     * chains onto it never run on an election thread; runs it here if the executor is shut down.
     */
    static void deliver(Executor executor, Runnable completion) {
        try {
            executor.execute(() -> run(completion));
        } catch (RejectedExecutionException e) {
            run(completion);
        }
    }
}
