package dev.fenceline.sample.db;

import java.time.Duration;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one wait for PostgreSQL at worker start. PostgreSQL, or the pooler in front of it, may be down or closed to
 * connections when a worker (re)starts — right after a failover or a pooler restart: a stateless worker waits for it
 * instead of exiting and needing a restart. Only {@link SampleDatabase.UnreachableException} is retried; any other
 * failure (wrong password, unknown role or database, a bug) is thrown at once, since waiting cannot fix it. The wait
 * is bounded, so a server that never comes back ends in an error naming the limit rather than a silent hang.
 */
public final class DatabaseWait {
    private static final Logger log = LoggerFactory.getLogger(DatabaseWait.class);

    /** Sleeps up to the given time between attempts; returns true when the caller was asked to stop meanwhile. */
    @FunctionalInterface
    public interface Pause {
        boolean stopRequestedWithin(Duration d) throws InterruptedException;
    }

    private final Duration limit;
    private final String limitName;
    private final Duration between;
    private final Pause pause;
    private final LongSupplier nanoTime;

    /**
     * @param limit     how long to keep retrying (zero: one attempt)
     * @param limitName the option or property that sets {@code limit}, for the error message
     */
    public DatabaseWait(Duration limit, String limitName, Duration between, Pause pause, LongSupplier nanoTime) {
        this.limit = limit;
        this.limitName = limitName;
        this.between = between;
        this.pause = pause;
        this.nanoTime = nanoTime;
    }

    /** Opens the database once it is reachable; null when asked to stop first. */
    public SampleDatabase open(Supplier<SampleDatabase> open) throws InterruptedException {
        long start = nanoTime.getAsLong();
        for (int attempt = 1; ; attempt++) {
            try {
                return open.get();
            } catch (SampleDatabase.UnreachableException e) {
                long waitedMs = Duration.ofNanos(nanoTime.getAsLong() - start).toMillis();
                if (waitedMs >= limit.toMillis()) {
                    throw new IllegalStateException(
                            "PostgreSQL still unreachable after " + attempt + " attempts over "
                                    + waitedMs + " ms, the limit set by " + limitName + "=" + limit.toMillis() + ": "
                                    + e.getMessage(),
                            e);
                }
                if (attempt == 1 || attempt % 10 == 0) {
                    log.warn(
                            "{} (attempt {}, waited {} of {} ms set by {}); retrying",
                            e.getMessage(),
                            attempt,
                            waitedMs,
                            limit.toMillis(),
                            limitName);
                }
                if (pause.stopRequestedWithin(between)) {
                    return null;
                }
            }
        }
    }
}
