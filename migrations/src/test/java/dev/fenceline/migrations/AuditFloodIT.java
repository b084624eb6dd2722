package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.testkit.PostgresServer;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A flood of raw stale writes from 16 password-authenticated connections: every one refused and audited exactly
 * once, through at most one kept audit connection per flooding backend, all as fencing_auditor_writer (an ordinary
 * role: it can never take a superuser-reserved slot), and nobody refused for lack of connections.
 *
 * <p>The suite runs a bounded flood ({@code -Daudit.flood.total}, default 2 000: the full 20 000 of the benchmark
 * would cost the suite about a minute on a shared 2-core machine). Timings are the benchmark's business
 * ({@code migrations/audit-flood-bench.sh}), not asserted here.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AuditFloodIT {
    private static final int CONNECTIONS = 16;
    private static final int TOTAL = Integer.getInteger("audit.flood.total", 2_000);

    private PostgresServer server;
    private AuditFixture f;

    @BeforeAll
    void start() throws Exception {
        // 16 flooding sessions + 16 audit connections + monitor + test: well inside 50 - 3 reserved.
        server = AuditFixture.startPasswordServer(50);
        f = AuditFixture.superuserOwned(server, "audit_flood", false);
    }

    @AfterAll
    void stop() {
        if (f != null) {
            f.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void everyStaleWriteOfAFloodIsAuditedExactlyOnceWithoutAConnectionStorm() throws Exception {
        AuditFlood.Result r = AuditFlood.run(f, CONNECTIONS, TOTAL, Duration.ofMinutes(5));

        assertThat(r.otherErrorSamples())
                .as("errors other than FL001 (e.g. too many connections)")
                .isEmpty();
        assertThat(r.otherErrors()).isZero();
        assertThat(r.refused()).isEqualTo(TOTAL);
        assertThat(f.count("SELECT count(*) FROM fencing.rejected_write WHERE reason = 'stale_term'"
                        + " AND source = 'trigger' AND offered_term = 4 AND highest_accepted = 5 AND db_user = 'audit_app'"
                        + " AND application_name LIKE 'flood-%'"))
                .isEqualTo(TOTAL);
        assertThat(f.count("SELECT count(*) FROM fencing.rejected_write")).isEqualTo(TOTAL);
        assertThat(f.text("SELECT trigger_counted || '/' || trigger_not_audited FROM fencing.rejection_counts"
                        + " WHERE reason = 'stale_term'"))
                .isEqualTo(TOTAL + "/0");
        assertThat(f.count("SELECT count(*) FROM payment")).isZero();

        assertThat(r.maxAuditBackends())
                .as("audit connections: one kept per flooding backend at most")
                .isPositive()
                .isLessThanOrEqualTo(CONNECTIONS);
        assertThat(r.maxAuditBackendsNotWriterRole())
                .as("audit connections not logged in as fencing_auditor_writer")
                .isZero();
        assertThat(r.maxClientBackends())
                .as("client backends vs. slots left outside the superuser reserve")
                .isLessThanOrEqualTo(r.usableSlots());
    }
}
