package dev.fenceline.election.internal;

/**
 * The clock deadlines are measured on: nanoseconds, never decreasing, on the {@link System#nanoTime()} scale
 * plus any suspend it detected. Injectable so decisions can be tested with a fake clock.
 */
interface ElectionClock {
    long nanoTime();

    /**
     * A reading of this clock on the {@link System#nanoTime()} scale, for what the election reports outside (events,
     * {@code Leadership.validUntilNanos()}, history files). Suspend counted so far is subtracted, so a deadline
     * reported this way is never later than the one the election decides by.
     */
    default long toSystemNanos(long clockNanos) {
        return clockNanos;
    }

    /** The production clock: counts host suspend (see {@link SuspendAwareClock}). */
    static ElectionClock system() {
        return SuspendAwareClock.SYSTEM;
    }
}
