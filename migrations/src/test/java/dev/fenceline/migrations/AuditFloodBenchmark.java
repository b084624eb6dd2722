package dev.fenceline.migrations;

import dev.fenceline.testkit.PostgresServer;
import java.time.Duration;
import java.util.Locale;

/**
 * What a trigger-mode rejection costs with its audit: floods of raw stale writes through password authentication
 * (scram-sha-256) against a DURABLE PostgreSQL (fsync, synchronous_commit on), schema owned by the superuser and
 * audited as fencing_auditor_writer: first from 1 connection (one rejection's cost without contention), then from
 * 16 (throughput under a flood); each also without dblink (the rejection without its audit row, for comparison). Every run is checked like {@link AuditFloodIT} checks it: all refused, all audited.
 *
 * <p>Not a test. Run: {@code migrations/audit-flood-bench.sh} ({@code -Dbench.total=20000 -Dbench.connections=16
 * -Dbench.single=2000}).
 */
public final class AuditFloodBenchmark {
    private static final int TOTAL = Integer.getInteger("bench.total", 20_000);
    private static final int CONNECTIONS = Integer.getInteger("bench.connections", 16);
    private static final int SINGLE = Integer.getInteger("bench.single", 2_000);

    private AuditFloodBenchmark() {}

    public static void main(String[] args) throws Exception {
        try (PostgresServer server = PostgresServer.start(PostgresServer.Options.defaults()
                .durable(true)
                .passwordAuth(true)
                .maxConnections(CONNECTIONS * 2 + 20))) {
            System.out.printf(
                    Locale.ROOT,
                    "audit flood benchmark: %s, durable, scram-sha-256, PostgreSQL on %d cores%n",
                    server.description(),
                    Runtime.getRuntime().availableProcessors());
            run(server, "warm-up", 1, Math.min(SINGLE, 500), true);
            // The same rejections with no audit connection (dblink dropped: server log line + counter only): what
            // the rejection itself costs, so the audit's share can be read off.
            run(server, "no dblink, 1", 1, SINGLE, false);
            run(server, "one connection", 1, SINGLE, true);
            run(server, "no dblink, 16", CONNECTIONS, TOTAL, false);
            run(server, "flood", CONNECTIONS, TOTAL, true);
        }
    }

    private static void run(PostgresServer server, String label, int connections, int total, boolean audited)
            throws Exception {
        try (AuditFixture f = AuditFixture.superuserOwned(server, "audit_bench", true)) {
            if (!audited) {
                try (java.sql.Connection c = f.asSuperuser();
                        java.sql.Statement s = c.createStatement()) {
                    s.execute("DROP EXTENSION dblink CASCADE");
                }
            }
            AuditFlood.Result r = AuditFlood.run(f, connections, total, Duration.ofMinutes(20));
            long rows = f.count("SELECT count(*) FROM fencing.rejected_write");
            System.out.printf(
                    Locale.ROOT,
                    "%-15s connections=%2d rejections=%6d refused=%6d audited_rows=%6d other_errors=%d"
                            + " elapsed=%.2fs  %.0f audited rejections/s  per rejection: mean %.2f ms, p50 %.2f ms,"
                            + " p99 %.2f ms, max %.2f ms  (server time per rejection %.3f ms)  audit connections max %d"
                            + " (not fencing_auditor_writer: %d)%n",
                    label,
                    connections,
                    total,
                    r.refused(),
                    rows,
                    r.otherErrors(),
                    r.elapsedNanos() / 1e9,
                    rows * 1e9 / r.elapsedNanos(),
                    r.meanMillis(),
                    r.percentileMillis(50),
                    r.percentileMillis(99),
                    r.percentileMillis(100),
                    r.elapsedNanos() / 1e6 / total,
                    r.maxAuditBackends(),
                    r.maxAuditBackendsNotWriterRole());
            if (r.refused() != total || r.otherErrors() != 0 || (audited && rows != total)) {
                System.out.println("  NOT every rejection audited exactly once: " + r.otherErrorSamples());
            }
        }
    }
}
