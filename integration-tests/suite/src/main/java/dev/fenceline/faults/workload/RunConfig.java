package dev.fenceline.faults.workload;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * One fault run.
 *
 * @param seed         drives the schedule and every random choice (targets, directions); printed, reproducible
 * @param kinds        fault kinds to use
 * @param rounds       smoke: each kind this many times, in a seeded shuffled order (0 = use {@code duration})
 * @param duration     soak: keep injecting random kinds until this much time has passed
 * @param hardCap      stop injecting when this much time has passed since the start, whatever the plan says
 * @param postgres     how the workers reach PostgreSQL: directly, through PgBouncer, with a standby to fail over to
 */
public record RunConfig(
        long seed,
        List<String> kinds,
        int rounds,
        Duration duration,
        Duration hardCap,
        Path jar,
        Path outputDir,
        int workers,
        Duration ttl,
        int batchSize,
        long intervalMs,
        int paymentsPerTick,
        long paymentTickMs,
        long maxPayments,
        boolean clockJumps,
        String election,
        PostgresSetup postgres) {

    /** Workers connected to PostgreSQL directly ({@link PostgresSetup#DIRECT}). */
    public RunConfig(
            long seed,
            List<String> kinds,
            int rounds,
            Duration duration,
            Duration hardCap,
            Path jar,
            Path outputDir,
            int workers,
            Duration ttl,
            int batchSize,
            long intervalMs,
            int paymentsPerTick,
            long paymentTickMs,
            long maxPayments,
            boolean clockJumps,
            String election) {
        this(
                seed,
                kinds,
                rounds,
                duration,
                hardCap,
                jar,
                outputDir,
                workers,
                ttl,
                batchSize,
                intervalMs,
                paymentsPerTick,
                paymentTickMs,
                maxPayments,
                clockJumps,
                election,
                PostgresSetup.DIRECT);
    }

    public RunConfig withPostgres(PostgresSetup setup) {
        return new RunConfig(
                seed,
                kinds,
                rounds,
                duration,
                hardCap,
                jar,
                outputDir,
                workers,
                ttl,
                batchSize,
                intervalMs,
                paymentsPerTick,
                paymentTickMs,
                maxPayments,
                clockJumps,
                election,
                setup);
    }

    public RunConfig {
        Objects.requireNonNull(kinds);
        Objects.requireNonNull(postgres, "postgres");
        Objects.requireNonNull(jar);
        Objects.requireNonNull(outputDir);
        if (workers < 2) {
            throw new IllegalArgumentException("need at least 2 workers, got " + workers);
        }
        if (rounds <= 0 && (duration == null || duration.isZero() || duration.isNegative())) {
            throw new IllegalArgumentException("either rounds > 0 (smoke) or a positive duration (soak)");
        }
    }

    /** The smoke run: every kind twice, TTL 2 s, about 8 minutes on 2 cores at most. */
    public static RunConfig smoke(long seed, Path jar, Path out, List<String> kinds) {
        return new RunConfig(
                seed,
                kinds,
                2,
                null,
                Duration.ofMinutes(6),
                jar,
                out,
                3,
                Duration.ofSeconds(2),
                20,
                100,
                8,
                250,
                20_000,
                true,
                "settlement");
    }

    public static RunConfig soak(long seed, Duration duration, Path jar, Path out, List<String> kinds) {
        return new RunConfig(
                seed,
                kinds,
                0,
                duration,
                duration.plusMinutes(2),
                jar,
                out,
                3,
                Duration.ofSeconds(3),
                50,
                100,
                10,
                200,
                5_000_000,
                true,
                "settlement");
    }
}
