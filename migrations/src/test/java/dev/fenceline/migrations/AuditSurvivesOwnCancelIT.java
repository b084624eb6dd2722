package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.testkit.PostgresServer;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A rogue raw writer (a fencing_app login, no library) sets a stale term for its transaction and updates the protected
 * table, with its own {@code statement_timeout} swept over 1..{@value #MAX_TIMEOUT_MS} ms so that its cancel lands at
 * every point of the trigger's rejection and audit, including while the audit opens its dblink connection (each
 * timeout on a new backend, whose first rejection opens that connection). Whatever the cancel hit: a rejection the
 * client saw (FL001) has exactly one audit row; a canceled statement (57014) has at most one; nothing is committed.
 * The statement may be canceled before the rejection is decided (then no row), but a client told "rejected" has its
 * evidence.
 *
 * <p>The outside report this pins: a cancel landing while the audit opens its connection marked the configured
 * target failed; the second attempt went to {@code audit_self_target()}, which has nothing in the ordinary set-up
 * (the foreign server already names this server), so the rejection ended FL001 with audited=f and no row.
 */
class AuditSurvivesOwnCancelIT {
    private static final Logger log = LoggerFactory.getLogger(AuditSurvivesOwnCancelIT.class);
    /** Each attempt offers its own stale term (below this mark), so its audit row is recognisable by offered_term. */
    private static final int MARK = 100_000;

    private static final int MAX_TIMEOUT_MS = 60;
    private static final int WRITES_PER_CONNECTION = 2;
    /** Sweeps of 1..MAX_TIMEOUT_MS, stopped early once an unaudited rejection shows. */
    private static final int SWEEPS = 3;

    private static final String APPLICATION = "own-cancel-probe";

    @Test
    void everyRejectionTheRogueWriterSawDespiteItsOwnStatementTimeoutHasExactlyOneAuditRow() throws Exception {
        try (PostgresServer server = PostgresServer.start(PostgresServer.Options.defaults());
                AuditFixture f = AuditFixture.superuserOwned(server, "audit_own_cancel", true)) {
            try (Connection c = f.asOwner();
                    Statement s = c.createStatement()) {
                s.execute("SELECT fencing.enter('" + AuditFixture.RESOURCE + "', " + MARK + ", 'leader-" + MARK + "')");
            }
            Map<Integer, String> outcomeByTerm = new HashMap<>();
            int term = 0;
            for (int sweep = 0;
                    sweep < SWEEPS && unauditedRejections(f, outcomeByTerm).isEmpty();
                    sweep++) {
                for (int timeoutMs = 1; timeoutMs <= MAX_TIMEOUT_MS; timeoutMs++) {
                    try (Connection c = f.asApp(APPLICATION);
                            Statement s = c.createStatement()) {
                        s.execute("SET statement_timeout = '" + timeoutMs + "ms'");
                        for (int w = 0; w < WRITES_PER_CONNECTION; w++) {
                            term++;
                            outcomeByTerm.put(term, staleWrite(c, s, term));
                        }
                    }
                }
            }

            Map<Integer, Long> rowsByTerm = rowsByTerm(f);
            Map<String, Integer> distribution = new TreeMap<>();
            List<String> violations = new ArrayList<>();
            for (Map.Entry<Integer, String> e : outcomeByTerm.entrySet()) {
                long rows = rowsByTerm.getOrDefault(e.getKey(), 0L);
                distribution.merge(
                        e.getValue() + (rows == 1 ? ", row" : rows == 0 ? ", no row" : ", " + rows + " rows"),
                        1,
                        Integer::sum);
                if (e.getValue().startsWith("FL001") && rows != 1) {
                    violations.add("term " + e.getKey() + ": the client saw " + e.getValue() + " but " + rows
                            + " audit rows exist");
                } else if (rows > 1) {
                    violations.add("term " + e.getKey() + " (" + e.getValue() + ") has " + rows + " audit rows");
                }
            }
            log.info("{} stale writes with statement_timeout 1..{} ms: {}", term, MAX_TIMEOUT_MS, distribution);

            assertThat(f.count("SELECT count(*) FROM public.payment"))
                    .as("stale writes committed")
                    .isZero();
            assertThat(rowsByTerm.keySet())
                    .as("rows only for attempted terms")
                    .allSatisfy(t -> assertThat(outcomeByTerm).containsKey(t));
            assertThat(violations)
                    .as("rejections without exactly one audit row (outcomes: %s)", distribution)
                    .isEmpty();
            assertThat(outcomeByTerm.values())
                    .as("some statements were rejected, some canceled (outcomes: %s)", distribution)
                    .anyMatch(o -> o.startsWith("FL001"))
                    .anyMatch(o -> o.equals("57014"));
        }
    }

    /**
     * {@code BEGIN; SET LOCAL fencing.term = term; UPDATE public.payment ...; ROLLBACK}: returns "FL001 audited=…"
     * or "57014" for the UPDATE. The SET LOCAL is repeated (in a new transaction) until it took effect: a 1 ms
     * timeout can cancel it too.
     */
    private static String staleWrite(Connection c, Statement s, int term) throws SQLException {
        c.setAutoCommit(false);
        try {
            for (int i = 0; ; i++) {
                try {
                    s.execute("SET LOCAL fencing.term = '" + term + "'");
                    break;
                } catch (SQLException e) {
                    c.rollback();
                    if (!"57014".equals(e.getSQLState()) || i == 100) {
                        throw e;
                    }
                }
            }
            try {
                s.execute("UPDATE public.payment SET amount = amount + 1");
                throw new AssertionError("the stale write with term " + term + " was accepted");
            } catch (SQLException e) {
                String state = e.getSQLState();
                if ("FL001".equals(state)) {
                    String detail =
                            e instanceof org.postgresql.util.PSQLException p && p.getServerErrorMessage() != null
                                    ? p.getServerErrorMessage().getDetail()
                                    : null;
                    boolean audited = detail != null && detail.matches("(?s).*audited=t.*");
                    return "FL001 audited=" + (audited ? "t" : "f");
                }
                if ("57014".equals(state)) {
                    return "57014";
                }
                throw new AssertionError("term " + term + " ended with " + state + ": " + e.getMessage(), e);
            }
        } finally {
            c.rollback();
            c.setAutoCommit(true);
        }
    }

    private static Map<Integer, Long> rowsByTerm(AuditFixture f) throws SQLException {
        Map<Integer, Long> rows = new HashMap<>();
        try (Connection c = f.asSuperuser();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT offered_term, count(*) FROM fencing.rejected_write"
                        + " WHERE application_name = '" + APPLICATION + "' GROUP BY offered_term")) {
            while (rs.next()) {
                rows.put(rs.getInt(1), rs.getLong(2));
            }
        }
        return rows;
    }

    /** Terms whose rejection the client saw but which have no audit row (checked between sweeps). */
    private static List<Integer> unauditedRejections(AuditFixture f, Map<Integer, String> outcomeByTerm)
            throws SQLException {
        Map<Integer, Long> rows = rowsByTerm(f);
        List<Integer> missing = new ArrayList<>();
        outcomeByTerm.forEach((t, o) -> {
            if (o.startsWith("FL001") && rows.getOrDefault(t, 0L) != 1) {
                missing.add(t);
            }
        });
        return missing;
    }
}
