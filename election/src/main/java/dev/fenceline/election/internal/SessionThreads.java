package dev.fenceline.election.internal;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * Owns the threads of one session: {@code fenceline-lease-*} (1, lease keeper only), {@code fenceline-election-*}
 * (2, all election state machines via per-election serial executors, plus timers and the watch's work), and
 * {@code fenceline-listeners-*} (1, default listener executor).
 *
 * <p>Every thread is a daemon and runs its tasks marked as {@link CallbackContext#inside() inside} the session, so
 * a {@code close()} issued from one of them is handed to another thread instead of waiting on itself.
 */
final class SessionThreads {
    /** Numbers the sessions of this JVM, so each one's threads can be told apart in a thread dump. */
    private static final AtomicInteger SEQ = new AtomicInteger();

    final ScheduledExecutorService lease;
    final ScheduledThreadPoolExecutor work;
    final ExecutorService listeners;

    SessionThreads() {
        int n = SEQ.incrementAndGet();
        this.lease = Executors.newSingleThreadScheduledExecutor(daemon("fenceline-lease-" + n));
        this.work = new ScheduledThreadPoolExecutor(2, daemon("fenceline-election-" + n));
        this.work.setRemoveOnCancelPolicy(true);
        this.listeners = Executors.newSingleThreadExecutor(daemon("fenceline-listeners-" + n));
    }

    /** Runs {@code r} on the work pool after {@code delay}; null once the pool is shut down. */
    @Nullable
    ScheduledFuture<?> schedule(Runnable r, Duration delay) {
        try {
            return work.schedule(r, Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            return null;
        }
    }

    /**
     * Hands {@code r} to the work pool, e.g. to leave a jetcd callback (and its lock) first; dropped once the
     * pool is shut down, since the session is closing then.
     */
    void execute(Runnable r) {
        try {
            work.execute(r);
        } catch (RejectedExecutionException ignored) {
            // closing
        }
    }

    /** Closing: stops renewals and election work at once; listener calls already queued still run. */
    void shutdown() {
        lease.shutdownNow();
        work.shutdownNow();
        listeners.shutdown();
    }

    /** Crashing, step one: no more renewals, transitions, timers. */
    void haltWork() {
        lease.shutdownNow();
        work.shutdownNow();
    }

    /** Crashing, last step: listener calls not yet started never run. */
    void haltListeners() {
        listeners.shutdownNow();
    }

    private static ThreadFactory daemon(String name) {
        AtomicInteger i = new AtomicInteger();
        return r -> {
            Thread t = new Thread(CallbackContext.marked(r), name + "-" + i.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
