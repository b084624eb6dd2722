package dev.fenceline.election.internal;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A monotonic clock that also counts time the host was suspended.
 *
 * <p>{@code System.nanoTime()} is CLOCK_MONOTONIC on Linux, which stops while the host is suspended (laptop
 * sleep, VM pause with some hypervisors): a leader resumed after a suspend longer than its TTL would still see
 * its remaining validity while etcd expired its lease long ago. CLOCK_BOOTTIME, which counts suspend, is not
 * reachable from Java without native code, so this clock compares the two clocks Java has: whenever the wall
 * clock ran ahead of the monotonic clock by more than {@code toleranceNanos} since the last reading, the
 * difference is added to every later reading. Deadlines on this clock therefore pass during a suspend.
 *
 * <p>Invariants: readings never decrease (the added offset only grows); a wall clock stepped forward (NTP step,
 * operator) ends validity early, which fails closed; a wall clock stepped back is ignored.
 */
final class SuspendAwareClock implements ElectionClock {
    /** Wall/monotonic disagreement below this is drift or slewing, not a suspend. */
    static final long DEFAULT_TOLERANCE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    static final SuspendAwareClock SYSTEM = new SuspendAwareClock(
            System::nanoTime, () -> TimeUnit.MILLISECONDS.toNanos(System.currentTimeMillis()), DEFAULT_TOLERANCE_NANOS);

    private final LongSupplier monotonic;
    private final LongSupplier wall;
    private final long toleranceNanos;
    /** {wall - monotonic at the last reading, offset added so far}; replaced atomically as one pair. */
    private final AtomicLong lastGap = new AtomicLong();

    private final AtomicLong offset = new AtomicLong();

    SuspendAwareClock(LongSupplier monotonic, LongSupplier wall, long toleranceNanos) {
        this.monotonic = monotonic;
        this.wall = wall;
        this.toleranceNanos = toleranceNanos;
        lastGap.set(wall.getAsLong() - monotonic.getAsLong());
    }

    @Override
    public long nanoTime() {
        long mono = monotonic.getAsLong();
        long gap = wall.getAsLong() - mono;
        long prev = lastGap.get();
        long jump = gap - prev;
        if (jump > toleranceNanos) {
            // the wall clock moved on while the monotonic clock stood still: count the difference once
            if (lastGap.compareAndSet(prev, gap)) {
                offset.addAndGet(jump);
            }
        } else {
            // drift, slewing, or a wall clock stepped back: re-anchor, never subtract (so slow drift never adds up
            // to a false suspend)
            lastGap.compareAndSet(prev, gap);
        }
        return mono + offset.get();
    }

    @Override
    public long toSystemNanos(long clockNanos) {
        return clockNanos - offset.get(); // the offset only grows: the result is never later than the true deadline
    }

    /** Total suspend (or forward wall steps) counted so far, in nanoseconds (diagnostics). */
    long countedSuspendNanos() {
        return offset.get();
    }
}
