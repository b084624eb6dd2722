package dev.fenceline.task;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * The stop request and the one condition a task's thread waits on, woken by the election's events, by close() and by
 * the end of a run.
 *
 * <p>Invariant: {@link #stopping()} never goes back to false, and every change of it or of {@link #inRun()} is made
 * under the lock and signalled, so a waiter never misses one.
 */
final class TaskSignals {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    private final LongSupplier nanoClock;
    private volatile boolean stopping;
    private volatile boolean inRun;

    TaskSignals(LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
    }

    /** close() was called, or the task's thread was interrupted: no new run starts. */
    boolean stopping() {
        return stopping;
    }

    /** A run's fenced transaction is under way. */
    boolean inRun() {
        return inRun;
    }

    /** Requests the stop and wakes the task's thread. */
    void requestStop() {
        lock.lock();
        try {
            stopping = true;
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Wakes the task's thread to look again (the election changed). */
    void wake() {
        lock.lock();
        try {
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits up to {@code nanos} or until woken; returns at once when stopping. An interrupt counts as a stop request:
     * the thread was asked to end.
     */
    void await(long nanos) {
        lock.lock();
        try {
            if (!stopping && nanos > 0) {
                wake.awaitNanos(nanos);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopping = true;
        } finally {
            lock.unlock();
        }
    }

    void runStarted() {
        inRun = true;
    }

    void runEnded() {
        lock.lock();
        try {
            inRun = false;
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits (on the caller's thread) until no run is under way, {@code thread} ended, or {@code timeoutNanos} passed;
     * returns whether a run is still under way.
     */
    boolean awaitRunEnd(Thread thread, long timeoutNanos) throws InterruptedException {
        long deadline = nanoClock.getAsLong() + timeoutNanos;
        lock.lock();
        try {
            long left;
            while (inRun && thread.isAlive() && (left = deadline - nanoClock.getAsLong()) > 0) {
                wake.await(left, TimeUnit.NANOSECONDS);
            }
        } finally {
            lock.unlock();
        }
        return inRun;
    }
}
