package dev.fenceline.election.internal;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/** Exponential backoff with full jitter: attempt n waits uniform(min, min(max, min*2^n)). Not thread-safe. */
public final class Backoff {
    private final long minNanos;
    private final long maxNanos;
    private int attempt;

    public Backoff(Duration min, Duration max) {
        this.minNanos = min.toNanos();
        this.maxNanos = max.toNanos();
    }

    /** The next delay; grows until {@link #reset()}. */
    public Duration next() {
        long ceiling = ceilingNanos(attempt);
        if (attempt < 62) {
            attempt++;
        }
        long span = ceiling - minNanos;
        long delay = minNanos + (span <= 0 ? 0 : ThreadLocalRandom.current().nextLong(span + 1));
        return Duration.ofNanos(delay);
    }

    /** Upper bound of the delay of attempt {@code n} (0-based), for tests. */
    long ceilingNanos(int n) {
        long c = minNanos;
        for (int i = 0; i < n && c < maxNanos; i++) {
            c = c > Long.MAX_VALUE / 2 ? Long.MAX_VALUE : c * 2;
        }
        return Math.min(c, maxNanos);
    }

    public void reset() {
        attempt = 0;
    }

    public int attempts() {
        return attempt;
    }
}
