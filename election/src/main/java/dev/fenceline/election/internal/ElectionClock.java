package dev.fenceline.election.internal;

/**
 * The clock deadlines are measured on: nanoseconds, never decreasing, on the {@link System#nanoTime()} scale
 * plus any suspend it detected. Injectable so decisions can be tested with a fake clock.
 */
interface ElectionClock {
  long nanoTime();

  /** The production clock: counts host suspend (see {@link SuspendAwareClock}). */
  static ElectionClock system() {
    return SuspendAwareClock.SYSTEM;
  }
}
