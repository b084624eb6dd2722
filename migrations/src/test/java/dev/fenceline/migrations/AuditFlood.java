package dev.fenceline.migrations;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A stale service hammering a protected table: {@code connections} sessions of the application role, logged in with
 * a password over TCP, each sending its share of {@code total} raw INSERTs at the stale term 4 (the mark is 5), one
 * statement per transaction. Every statement must be refused with FL001; a monitor samples pg_stat_activity to see
 * how many audit connections exist and as whom. Shared by {@link AuditFloodIT} (asserts counts) and the benchmark
 * (prints timings).
 */
final class AuditFlood {
    /** What a flood did. Latencies are per statement as the client saw them (send to refusal received). */
    record Result(
            int connections,
            int total,
            long refused,
            long otherErrors,
            List<String> otherErrorSamples,
            long elapsedNanos,
            long[] latenciesNanos,
            int maxAuditBackends,
            int maxAuditBackendsNotWriterRole,
            int maxClientBackends,
            int usableSlots) {
        double perSecond() {
            return refused * 1e9 / elapsedNanos;
        }

        double percentileMillis(double p) {
            if (latenciesNanos.length == 0) {
                return Double.NaN;
            }
            int i = (int) Math.min(latenciesNanos.length - 1, Math.ceil(p / 100.0 * latenciesNanos.length) - 1);
            return latenciesNanos[Math.max(0, i)] / 1e6;
        }

        double meanMillis() {
            return Arrays.stream(latenciesNanos).average().orElse(Double.NaN) / 1e6;
        }
    }

    private AuditFlood() {}

    static Result run(AuditFixture f, int connections, int total, Duration timeout) throws Exception {
        if (connections < 1 || total < connections) {
            throw new IllegalArgumentException(
                    "need 1 <= connections <= total, got connections=" + connections + " total=" + total);
        }
        AtomicLong refused = new AtomicLong();
        AtomicLong other = new AtomicLong();
        ConcurrentLinkedQueue<String> samples = new ConcurrentLinkedQueue<>();
        long[] latencies = new long[total];
        AtomicInteger next = new AtomicInteger();
        AtomicBoolean done = new AtomicBoolean();
        AtomicInteger maxAudit = new AtomicInteger();
        AtomicInteger maxAuditOther = new AtomicInteger();
        AtomicInteger maxClients = new AtomicInteger();
        int usableSlots;
        try (Connection c = f.asSuperuser();
                Statement s = c.createStatement()) {
            usableSlots = Integer.parseInt(AuditFixture.text(
                    s,
                    "SELECT current_setting('max_connections')::int"
                            + " - current_setting('superuser_reserved_connections')::int"));
        }

        ExecutorService pool = Executors.newFixedThreadPool(connections + 1);
        CountDownLatch ready = new CountDownLatch(connections);
        CountDownLatch go = new CountDownLatch(1);
        List<java.util.concurrent.Future<?>> workers = new ArrayList<>();
        java.util.concurrent.Future<?> monitor = pool.submit(() -> {
            try (Connection c = f.asSuperuser();
                    Statement s = c.createStatement()) {
                while (!done.get()) {
                    try (ResultSet rs =
                            s.executeQuery("SELECT count(*) FILTER (WHERE application_name = 'fencing_audit'),"
                                    + " count(*) FILTER (WHERE application_name = 'fencing_audit'"
                                    + "                    AND usename IS DISTINCT FROM 'fencing_auditor_writer'),"
                                    + " count(*) FILTER (WHERE backend_type = 'client backend')"
                                    + " FROM pg_stat_activity")) {
                        rs.next();
                        maxAudit.accumulateAndGet(rs.getInt(1), Math::max);
                        maxAuditOther.accumulateAndGet(rs.getInt(2), Math::max);
                        maxClients.accumulateAndGet(rs.getInt(3), Math::max);
                    }
                    Thread.sleep(20);
                }
            }
            return null;
        });
        int perConnection = total / connections;
        for (int w = 0; w < connections; w++) {
            int share = w == connections - 1 ? total - perConnection * (connections - 1) : perConnection;
            String applicationName = "flood-" + w;
            workers.add(pool.submit(() -> {
                try (Connection c = f.asApp(applicationName);
                        Statement s = c.createStatement();
                        PreparedStatement insert =
                                c.prepareStatement("INSERT INTO payment (id, amount) VALUES (?, 1)")) {
                    s.execute("SET fencing.term = '4'");
                    ready.countDown();
                    go.await();
                    for (int i = 0; i < share; i++) {
                        int n = next.getAndIncrement();
                        insert.setLong(1, 1_000_000L + n);
                        long t0 = System.nanoTime();
                        try {
                            insert.executeUpdate();
                            other.incrementAndGet();
                            samples.add("accepted a stale write (id " + (1_000_000L + n) + ")");
                        } catch (SQLException e) {
                            if ("FL001".equals(e.getSQLState())) {
                                refused.incrementAndGet();
                            } else {
                                other.incrementAndGet();
                                if (samples.size() < 10) {
                                    samples.add(e.getSQLState() + " " + e.getMessage());
                                }
                            }
                        }
                        latencies[n] = System.nanoTime() - t0;
                    }
                } catch (SQLException e) {
                    other.incrementAndGet();
                    samples.add("connection " + applicationName + ": " + e.getSQLState() + " " + e.getMessage());
                    ready.countDown();
                }
                return null;
            }));
        }
        if (!ready.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the flood's " + connections + " connections were not ready within " + timeout);
        }
        long start = System.nanoTime();
        go.countDown();
        long deadline = start + timeout.toNanos();
        long elapsed;
        try {
            for (java.util.concurrent.Future<?> w : workers) {
                w.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
            elapsed = System.nanoTime() - start;
        } finally {
            done.set(true);
            pool.shutdown();
            if (!pool.awaitTermination(30, TimeUnit.SECONDS)) {
                pool.shutdownNow(); // a timed-out flood: interrupt what is left (its connections close)
            }
        }
        monitor.get(10, TimeUnit.SECONDS);
        long[] measured = Arrays.copyOf(latencies, Math.min(next.get(), total));
        Arrays.sort(measured);
        return new Result(
                connections,
                total,
                refused.get(),
                other.get(),
                List.copyOf(samples),
                elapsed,
                measured,
                maxAudit.get(),
                maxAuditOther.get(),
                maxClients.get(),
                usableSlots);
    }
}
