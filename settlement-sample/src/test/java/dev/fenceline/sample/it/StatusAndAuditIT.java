package dev.fenceline.sample.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.FreePorts;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code status --json} field names and values, the {@code audit} reports in all three formats, and the operator
 * commands (pause / resume / resign), against one running worker.
 */
@ExtendWith({PostgresExtension.class, EtcdClusterExtension.class})
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class StatusAndAuditIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private SampleProcesses s;
    private long term;
    private int metricsPort;

    @BeforeAll
    void start(TestDatabase db, EtcdCluster etcd) throws Exception {
        s = new SampleProcesses(db, etcd, "status");
        assertThat(s.cli("migrate").exit()).isZero();
        assertThat(s.cli("seed", "--payments", "300").exit()).isZero();
        try (ElectionAdmin admin = s.admin()) {
            admin.ensureTermAtLeast(SampleProcesses.ELECTION, 5); // so that term 1 is stale below
        }
        metricsPort = FreePorts.next();
        s.startWorker(
                "w1",
                "--ttl-ms",
                "5000",
                "--batch-size",
                "50",
                "--interval-ms",
                "20",
                "--metrics-port",
                Integer.toString(metricsPort));
        await("all settled")
                .atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> s.pending() == 0);
        term = s.scalar("SELECT max(term) FROM settlement.settlement_batch");
        // two writes that bypass the writer: one with a stale term, one without any: both rejected by the trigger and
        // audited
        rawWrite("SET LOCAL fencing.term = '1'");
        rawWrite(null);
    }

    private void rawWrite(String setting) throws SQLException {
        try (Connection c = s.db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            try (Statement st = c.createStatement()) {
                if (setting != null) {
                    st.execute(setting);
                }
                st.executeUpdate("UPDATE settlement.payment SET amount_cents = amount_cents + 1 WHERE id = 1");
                throw new AssertionError("the trigger let a raw write through");
            } catch (SQLException expected) {
                assertThat(expected.getSQLState()).isIn("FL001", "FL002");
                c.rollback();
            }
        }
    }

    @AfterAll
    void stop() throws Exception {
        if (s != null) {
            s.close();
        }
    }

    @Test
    @Order(1)
    void statusJsonIsOneObjectWithTheDocumentedFieldNames() throws Exception {
        SampleProcesses.Result r = s.cli("status", "--json");
        assertThat(r.exit()).as(r.stderr()).isZero();
        JsonNode n = JSON.readTree(r.stdout());
        List<String> fields = new java.util.ArrayList<>();
        for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
            fields.add(it.next());
        }
        assertThat(fields)
                .containsExactly(
                        "election",
                        "resource",
                        "leader_id",
                        "term",
                        "lease_id",
                        "lease_id_hex",
                        "ttl_left_ms",
                        "acquired_at",
                        "etcd_term",
                        "paused",
                        "db_mark",
                        "marks",
                        "payments_pending",
                        "payments_settled",
                        "batches",
                        "rejected_writes",
                        "etcd_ok",
                        "database_ok",
                        "errors");
        assertThat(n.get("election").asText()).isEqualTo("settlement");
        assertThat(n.get("leader_id").asText()).isEqualTo("w1");
        assertThat(n.get("term").asLong()).isEqualTo(term).isGreaterThanOrEqualTo(5);
        assertThat(n.get("lease_id").asLong()).isPositive();
        assertThat(n.get("ttl_left_ms").asLong()).isPositive();
        assertThat(n.get("etcd_term").asLong()).isEqualTo(term);
        assertThat(n.get("paused").asBoolean()).isFalse();
        assertThat(n.get("db_mark").asLong()).isEqualTo(term);
        assertThat(n.get("marks").get(0).get("resource").asText()).isEqualTo("settlement");
        assertThat(n.get("marks").get(0).get("highest_accepted").asLong()).isEqualTo(term);
        assertThat(n.get("payments_pending").asLong()).isZero();
        assertThat(n.get("payments_settled").asLong()).isEqualTo(300);
        assertThat(n.get("batches").asLong()).isEqualTo(6);
        assertThat(n.get("rejected_writes").asLong()).isEqualTo(2);
        assertThat(n.get("etcd_ok").asBoolean()).isTrue();
        assertThat(n.get("database_ok").asBoolean()).isTrue();
        assertThat(n.get("errors")).isEmpty();
    }

    @Test
    @Order(2)
    void statusTextNamesLeaderTermAndCounts() throws Exception {
        SampleProcesses.Result r = s.cli("status");
        assertThat(r.exit()).isZero();
        assertThat(r.stdout())
                .contains("leader        w1  term " + term)
                .contains("0 pending, 300 settled in 6 batches")
                .contains("2 stale/term-less writes audited");
    }

    @Test
    @Order(3)
    void auditRejectedInTableJsonAndCsv() throws Exception {
        SampleProcesses.Result table = s.cli("audit", "rejected");
        assertThat(table.exit()).isZero();
        assertThat(table.stdout().lines().findFirst().orElseThrow().split("\\s*\\|\\s*"))
                .startsWith("id", "rejected_at", "resource", "offered_term", "highest_accepted");
        assertThat(table.stdout()).contains("(2 rows)").contains("stale_term").contains("no_term");

        SampleProcesses.Result json = s.cli("audit", "rejected", "--format", "json");
        JsonNode arr = JSON.readTree(json.stdout());
        assertThat(arr.isArray()).isTrue();
        assertThat(arr).hasSize(2);
        JsonNode stale = arr.get(0);
        assertThat(stale.get("offered_term").asLong()).isEqualTo(1);
        assertThat(stale.get("highest_accepted").asLong()).isEqualTo(term);
        assertThat(stale.get("reason").asText()).isEqualTo("stale_term");
        assertThat(stale.get("source").asText()).isEqualTo("trigger");
        assertThat(stale.get("table_name").asText()).isEqualTo("settlement.payment");
        assertThat(stale.get("operation").asText()).isEqualTo("UPDATE");
        assertThat(arr.get(1).get("reason").asText()).isEqualTo("no_term");
        assertThat(arr.get(1).get("offered_term").isNull()).isTrue();

        SampleProcesses.Result csv = s.cli("audit", "rejected", "--format", "csv");
        List<String> lines = csv.stdout().lines().toList();
        assertThat(lines).hasSize(3);
        assertThat(lines.get(0))
                .isEqualTo("id,rejected_at,resource,offered_term,highest_accepted,leader_id,reason,source,table_name,"
                        + "operation,business_key,db_user,application_name");
        assertThat(lines.get(1)).contains(",settlement,1," + term + ",");

        SampleProcesses.Result future =
                s.cli("audit", "rejected", "--since", "2999-01-01T00:00:00Z", "--format", "json");
        assertThat(JSON.readTree(future.stdout())).isEmpty();
    }

    @Test
    @Order(4)
    void auditTermsListsEveryAcceptedTermWithItsBatches() throws Exception {
        SampleProcesses.Result json = s.cli("audit", "terms", "--format", "json");
        assertThat(json.exit()).isZero();
        JsonNode arr = JSON.readTree(json.stdout());
        assertThat(arr).hasSize(1);
        assertThat(arr.get(0).get("term").asLong()).isEqualTo(term);
        assertThat(arr.get(0).get("leader_id").asText()).isEqualTo("w1");
        assertThat(arr.get(0).get("batches").asLong()).isEqualTo(6);
        assertThat(arr.get(0).get("payments").asLong()).isEqualTo(300);
        assertThat(s.cli("audit", "terms").stdout()).contains("(1 row)");
    }

    @Test
    @Order(5)
    void workerServesPrometheusMetricsAndHealth() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        HttpResponse<String> metrics = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPort + "/metrics"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(metrics.statusCode()).isEqualTo(200);
        assertThat(metrics.body())
                .contains("fenceline_sample_batches_total{")
                .contains("outcome=\"committed\"")
                .contains("fenceline_sample_payments_settled_total")
                .contains("fenceline_sample_leader{")
                .contains("worker=\"w1\"");
        HttpResponse<String> health = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPort + "/health"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode()).isEqualTo(200);
        JsonNode h = JSON.readTree(health.body());
        assertThat(h.get("status").asText()).isEqualTo("UP");
        assertThat(h.get("state").asText()).isEqualTo("LEADER");
        assertThat(h.get("term").asLong()).isEqualTo(term);
        assertThat(h.get("batches_committed").asLong()).isEqualTo(6);
    }

    @Test
    @Order(6)
    void pauseMakesTheLeaderResignAndResumeLetsItCampaignAgain() throws Exception {
        try (ElectionAdmin admin = s.admin()) {
            SampleProcesses.Result pause = s.cli("pause");
            assertThat(pause.exit()).as(pause.stderr()).isZero();
            assertThat(admin.isPaused(SampleProcesses.ELECTION)).isTrue();
            await("leader gone")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> SampleProcesses.leader(admin).isEmpty());
            assertThat(JSON.readTree(s.cli("status", "--json").stdout())
                            .get("paused")
                            .asBoolean())
                    .isTrue();

            assertThat(s.cli("resume").exit()).isZero();
            await("a leader again")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> SampleProcesses.leader(admin).isPresent());
            long resumedTerm = SampleProcesses.leader(admin).orElseThrow().term();
            assertThat(resumedTerm).isGreaterThan(term);

            SampleProcesses.Result resign = s.cli("resign");
            assertThat(resign.exit()).as(resign.stderr()).isZero();
            assertThat(resign.stdout()).contains("term " + resumedTerm);
            await("a new term after resign")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> SampleProcesses.leader(admin)
                            .map(r -> r.term() > resumedTerm)
                            .orElse(false));
        }
    }
}
