package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.fenceline.testkit.PostgresServer;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The application role cancels its own stale statements ({@code statement_timeout} from 1 ms to 148 ms, shorter than the rejection and its audit take) at every point of the
 * trigger's rejection and audit. Whatever the point, the stale write is never committed, no rejection gets two audit
 * rows, no row exists without its counter, and what a cancel did not let the audit write shows as
 * {@code trigger_not_audited} in {@code fencing.rejection_counts}.
 */
class AuditCancelIT {
    private static final Logger log = LoggerFactory.getLogger(AuditCancelIT.class);
    /** Each attempt offers its own stale term (below this mark), so its audit row is recognisable by offered_term. */
    private static final int MARK = 1000;

    private static final int MAX_TIMEOUT_MS = 148;
    private static final int TIMEOUT_STEP_MS = 3;
    private static final int WRITES_PER_CONNECTION = 2;

    @Test
    void aCanceledStaleWriteIsNeverCommittedNeverAuditedTwiceAndItsMissingRowIsCounted() throws Exception {
        try (PostgresServer server = PostgresServer.start(PostgresServer.Options.defaults());
                AuditFixture f = AuditFixture.superuserOwned(server, "audit_cancel", true)) {
            try (Connection c = f.asOwner();
                    Statement s = c.createStatement()) {
                s.execute("SELECT fencing.enter('" + AuditFixture.RESOURCE + "', " + MARK + ", 'leader-" + MARK + "')");
            }
            long countedBefore =
                    f.count("SELECT trigger_counted FROM fencing.rejection_counts WHERE reason = 'stale_term'");

            Map<Integer, String> outcomeByTerm = new HashMap<>();
            int term = 0;
            for (int timeoutMs = 1; timeoutMs <= MAX_TIMEOUT_MS; timeoutMs += TIMEOUT_STEP_MS) {
                // A new backend each time: the first write also opens the audit connection, the second reuses it.
                try (Connection c = f.asApp("cancel-probe");
                        Statement s = c.createStatement()) {
                    s.execute("SET statement_timeout = '" + timeoutMs + "ms'");
                    for (int w = 0; w < WRITES_PER_CONNECTION; w++) {
                        term++;
                        setDespiteTheTimeout(s, "SET fencing.term = '" + term + "'");
                        try {
                            s.execute("INSERT INTO payment VALUES (" + term + ", 1)");
                            fail("the stale write with term " + term + " was accepted");
                        } catch (SQLException e) {
                            String state = e.getSQLState();
                            if ("FL001".equals(state)) {
                                outcomeByTerm.put(
                                        term,
                                        e.getMessage().contains("audited=t") ? "FL001 audited" : "FL001 not audited");
                            } else if ("57014".equals(state)) {
                                outcomeByTerm.put(term, "57014");
                            } else {
                                fail("term " + term + " ended with " + state + ": " + e.getMessage());
                            }
                        }
                    }
                }
            }
            int attempts = term;

            assertThat(f.count("SELECT count(*) FROM public.payment"))
                    .as("stale writes committed")
                    .isZero();
            Map<Integer, Long> rowsByTerm = new HashMap<>();
            try (Connection c = f.asSuperuser();
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery(
                            "SELECT offered_term, count(*) FROM fencing.rejected_write"
                                    + " WHERE source = 'trigger' AND application_name = 'cancel-probe' GROUP BY offered_term")) {
                while (rs.next()) {
                    rowsByTerm.put(rs.getInt(1), rs.getLong(2));
                }
            }
            long rows = rowsByTerm.values().stream().mapToLong(Long::longValue).sum();
            long counted = f.count("SELECT trigger_counted FROM fencing.rejection_counts WHERE reason = 'stale_term'")
                    - countedBefore;
            long notAudited =
                    f.count("SELECT trigger_not_audited FROM fencing.rejection_counts WHERE reason = 'stale_term'");

            Map<String, Integer> distribution = new TreeMap<>();
            List<String> violations = new ArrayList<>();
            for (int t = 1; t <= attempts; t++) {
                String outcome = outcomeByTerm.get(t);
                long r = rowsByTerm.getOrDefault(t, 0L);
                distribution.merge(
                        outcome + (r == 1 ? ", row" : r == 0 ? ", no row" : ", " + r + " rows"), 1, Integer::sum);
                if (r > 1) {
                    violations.add("term " + t + " (" + outcome + ") has " + r + " audit rows");
                }
                if (outcome.equals("FL001 audited") && r != 1) {
                    violations.add("term " + t + " was reported audited but has " + r + " rows");
                }
            }
            log.info(
                    "{} stale writes canceled by statement_timeout 1..{} ms: {}; counted {}, rows {}, trigger_not_audited {}",
                    attempts,
                    MAX_TIMEOUT_MS,
                    distribution,
                    counted,
                    rows,
                    notAudited);

            assertThat(violations).isEmpty();
            assertThat(rowsByTerm.keySet()).allSatisfy(t -> assertThat(t).isBetween(1, attempts));
            assertThat(counted)
                    .as("rows never outnumber the counter; the counter never outnumbers the attempts")
                    .isBetween(rows, (long) attempts);
            assertThat(notAudited)
                    .as("every counted rejection without its row is visible to a DBA")
                    .isEqualTo(counted - rows);
            long rejectedByTheFence = outcomeByTerm.values().stream()
                    .filter(o -> o.startsWith("FL001"))
                    .count();
            assertThat(counted)
                    .as("every rejection the client saw is counted")
                    .isGreaterThanOrEqualTo(rejectedByTheFence);
            assertThat(outcomeByTerm.values())
                    .as("the timeouts were short enough to cancel some statements")
                    .contains("57014");
        }
    }

    /**
     * The cancel arrives while the row is on its way: the audit writer's INSERT waits for a lock held by a DBA session
     * when the application role's statement is canceled. dblink's call blocks, so the cancel is processed once the row
     * has been committed; the audit then learns from the audit connection that it was, and the statement ends with
     * the fence's error, the rejection audited once.
     */
    @Test
    void aCancelWhileTheRowIsBeingSentEndsWithTheFencesErrorAndTheRowAuditedOnce() throws Exception {
        try (PostgresServer server = PostgresServer.start(PostgresServer.Options.defaults());
                AuditFixture f = AuditFixture.superuserOwned(server, "audit_cancel_send", true);
                Connection dba = f.asSuperuser();
                Statement d = dba.createStatement();
                Connection locker = f.asSuperuser();
                Statement l = locker.createStatement();
                Connection app = f.asApp("cancel-while-sending");
                Statement s = app.createStatement()) {
            String appPid = AuditFixture.text(s, "SELECT pg_backend_pid()");
            s.execute("SET fencing.term = '4'");
            locker.setAutoCommit(false);
            l.execute("LOCK TABLE fencing.rejected_write IN EXCLUSIVE MODE");

            CompletableFuture<SQLException> write = CompletableFuture.supplyAsync(() -> {
                try {
                    s.execute("INSERT INTO payment VALUES (1, 1)");
                    return null;
                } catch (SQLException e) {
                    return e;
                }
            });
            awaitTrue(
                    d,
                    "SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'fencing_audit'"
                            + " AND wait_event_type = 'Lock' AND datname = current_database()");
            try (Connection canceler = f.asApp("canceler");
                    Statement k = canceler.createStatement()) {
                // The application role itself cancels its statement from another session (same role: allowed).
                assertThat(AuditFixture.text(k, "SELECT pg_cancel_backend(" + appPid + ")"))
                        .isEqualTo("t");
            }
            locker.commit();

            SQLException e = write.get(60, TimeUnit.SECONDS);
            if (e == null) {
                fail("the stale write was accepted");
            }
            assertThat(e.getSQLState()).as(e.getMessage()).isEqualTo("FL001");
            assertThat(e.getMessage()).contains("audited=t");
            assertThat(f.count("SELECT count(*) FROM fencing.rejected_write WHERE source = 'trigger'"
                            + " AND application_name = 'cancel-while-sending' AND offered_term = 4"))
                    .isEqualTo(1);
            assertThat(f.count("SELECT trigger_counted FROM fencing.rejection_counts WHERE reason = 'stale_term'"))
                    .isEqualTo(1);
            assertThat(f.count("SELECT count(*) FROM public.payment")).isZero();
        }
    }

    /** A SET can itself outlast a 1 ms statement_timeout (then it is rolled back): repeated until it took effect. */
    private static void setDespiteTheTimeout(Statement s, String sql) throws SQLException {
        for (int i = 0; ; i++) {
            try {
                s.execute(sql);
                return;
            } catch (SQLException e) {
                if (!"57014".equals(e.getSQLState()) || i == 100) {
                    throw e;
                }
            }
        }
    }

    private static void awaitTrue(Statement s, String sql) throws SQLException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            if ("t".equals(AuditFixture.text(s, sql))) {
                return;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("not true within 30 s: " + sql);
    }
}
