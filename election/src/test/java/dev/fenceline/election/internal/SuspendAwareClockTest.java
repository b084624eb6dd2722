package dev.fenceline.election.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A host suspend (monotonic clock stopped, wall clock ran on) must count toward deadlines. */
class SuspendAwareClockTest {
    private long mono = 1_000;
    private long wall = 5_000_000_000L;
    private final long ms = TimeUnit.MILLISECONDS.toNanos(1);
    private final SuspendAwareClock clock = new SuspendAwareClock(() -> mono, () -> wall, 100 * ms);

    private void run(long nanos) {
        mono += nanos;
        wall += nanos;
    }

    @Test
    void withoutSuspendItIsTheMonotonicClock() {
        run(3_000 * ms);
        assertThat(clock.nanoTime()).isEqualTo(mono);
    }

    @Test
    void suspendEndsAValidityThatMonotonicTimeAloneWouldKeep() {
        long deadline = clock.nanoTime() + 2_000 * ms; // a leader valid for 2 s more
        run(500 * ms);
        wall += 30_000 * ms; // host suspended for 30 s: the monotonic clock stood still
        assertThat(ValidityDeadline.isBefore(mono, deadline))
                .as("CLOCK_MONOTONIC alone: still valid")
                .isTrue();
        assertThat(ValidityDeadline.isBefore(clock.nanoTime(), deadline))
                .as("suspend counted: expired")
                .isFalse();
        assertThat(clock.countedSuspendNanos()).isEqualTo(30_000 * ms);
    }

    @Test
    void suspendIsCountedOnceAndReadingsNeverDecrease() {
        wall += 10_000 * ms;
        long a = clock.nanoTime();
        long b = clock.nanoTime();
        run(1 * ms);
        long c = clock.nanoTime();
        assertThat(b).isEqualTo(a);
        assertThat(c).isEqualTo(a + ms);
    }

    @Test
    void wallClockSteppedBackIsIgnoredAndDriftDoesNotAddUp() {
        wall -= 60_000 * ms;
        long before = clock.nanoTime();
        assertThat(before).isEqualTo(mono);
        for (int i = 0; i < 100; i++) { // 100 x 50 ms of wall drift: each below tolerance, 5 s in total
            mono += 1_000 * ms;
            wall += 1_050 * ms;
            clock.nanoTime();
        }
        assertThat(clock.countedSuspendNanos())
                .as("slow drift is not a suspend")
                .isZero();
    }

    @Test
    void deadlinesReportedOnTheSystemScaleAreNeverLaterThanTheOnesDecidedBy() {
        long deadline = clock.nanoTime() + 2_000 * ms;
        wall += 300_000
                * ms; // the wall clock stepped 5 min forward (or a suspend): validity ends on the election clock
        clock.nanoTime();
        wall -= 300_000 * ms; // ... and back: readings keep the offset
        run(1 * ms);
        long now = clock.nanoTime();
        // Listeners and history files compare with System.nanoTime() (here: mono); a deadline reported raw would lie
        // 5 min in the future of that scale.
        assertThat(clock.toSystemNanos(now)).isEqualTo(mono);
        assertThat(clock.toSystemNanos(deadline)).isLessThanOrEqualTo(deadline);
        assertThat(ValidityDeadline.isBefore(mono, clock.toSystemNanos(deadline)))
                .isFalse();
    }
}
