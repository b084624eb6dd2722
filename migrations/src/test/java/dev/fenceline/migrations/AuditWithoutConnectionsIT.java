package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.testkit.PostgresServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The trigger's audit commits its row through a connection of its own; with every connection slot taken by another
 * login's idle sessions, it cannot open one. The rejection stands (FL001) and then either the row is there after all,
 * or the client is told honestly that it is not: the error's DETAIL says audited=false, the rejection counter
 * ({@code fencing.rejection_counts}) counted it, and the server log has the WARNING with the rejection's fields
 * (resource, offered term, table, operation, reason, login, application name).
 */
class AuditWithoutConnectionsIT {
    private static final Logger log = LoggerFactory.getLogger(AuditWithoutConnectionsIT.class);
    private static final String FILLER = "audit_filler";
    private static final String FILLER_PASSWORD = "filler-password-0123456789";
    private static final String APPLICATION = "exhausted-probe";
    private static final int MARK = 1000;
    private static final int STALE = 777;
    /** Far above the 10 connection slots of the server: a bound on the filling loop, never reached. */
    private static final int MAX_FILLERS = 50;

    @Test
    void aStaleWriteRejectedWhileEveryConnectionSlotIsTakenIsAuditedOrReportedUnauditedCountedAndLogged()
            throws Exception {
        try (PostgresServer server =
                        PostgresServer.start(PostgresServer.Options.defaults().maxConnections(10));
                AuditFixture f = AuditFixture.superuserOwned(server, "audit_exhausted", true)) {
            try (Connection c = f.asOwner();
                    Statement s = c.createStatement()) {
                s.execute("SELECT fencing.enter('" + AuditFixture.RESOURCE + "', " + MARK + ", 'leader-" + MARK + "')");
            }
            server.createLoginRole(FILLER, FILLER_PASSWORD);
            long countedBefore = counted(f);
            long logBefore = Files.size(server.logFile());

            SQLException rejection;
            String detail;
            List<Connection> fillers = new ArrayList<>();
            try (Connection rogue = f.asApp(APPLICATION);
                    Statement s = rogue.createStatement()) {
                SQLException full = null;
                while (full == null && fillers.size() < MAX_FILLERS) {
                    try {
                        Properties p = new Properties();
                        p.setProperty("user", FILLER);
                        p.setProperty("password", FILLER_PASSWORD);
                        fillers.add(DriverManager.getConnection(f.db.jdbcUrl(), p));
                    } catch (SQLException e) {
                        full = e;
                    }
                }
                assertThat((Throwable) full)
                        .as("every ordinary connection slot is taken (after %s filler sessions)", fillers.size())
                        .isNotNull();
                assertThat(full.getSQLState()).as("%s", full.getMessage()).isEqualTo("53300");

                rogue.setAutoCommit(false);
                s.execute("SET LOCAL fencing.term = '" + STALE + "'");
                try {
                    s.execute("UPDATE public.payment SET amount = amount + 1");
                    throw new AssertionError("the stale write was accepted");
                } catch (SQLException e) {
                    rejection = e;
                } finally {
                    rogue.rollback();
                }
                detail = rejection instanceof org.postgresql.util.PSQLException p && p.getServerErrorMessage() != null
                        ? p.getServerErrorMessage().getDetail()
                        : null;
            } finally {
                for (Connection c : fillers) {
                    c.close();
                }
            }

            assertThat(rejection.getSQLState()).as("%s", rejection.getMessage()).isEqualTo("FL001");
            long rows = f.count("SELECT count(*) FROM fencing.rejected_write WHERE application_name = '" + APPLICATION
                    + "' AND offered_term = " + STALE);
            log.info("stale write with every connection slot taken: {} audit row(s), DETAIL: {}", rows, detail);
            if (rows == 1) {
                return; // audited after all
            }
            assertThat(rows).as("audit rows of the rejection").isZero();
            assertThat(detail)
                    .as("the rejection's DETAIL tells the client no row was written")
                    .isNotNull()
                    .matches("(?s).*audited=f.*");
            assertThat(counted(f) - countedBefore)
                    .as("fencing.rejection_counts counted the rejection")
                    .isEqualTo(1);
            String serverLog = newLog(server, logBefore);
            List<String> warnings = entries(serverLog).stream()
                    .filter(l ->
                            l.contains("WARNING") && l.contains(APPLICATION) && l.contains(Integer.toString(STALE)))
                    .toList();
            assertThat(warnings)
                    .as("the server log's WARNING about the unaudited rejection (log since the write:%n%s)", serverLog)
                    .isNotEmpty();
            log.info("the server log's WARNING: {}", warnings.get(0));
            assertThat(warnings.get(0))
                    .as("the WARNING carries every field of the rejection")
                    .contains(
                            AuditFixture.RESOURCE,
                            Integer.toString(STALE),
                            "payment",
                            "UPDATE",
                            "stale_term",
                            AuditFixture.APP,
                            APPLICATION);
        }
    }

    private static long counted(AuditFixture f) throws SQLException {
        return f.count("SELECT trigger_counted FROM fencing.rejection_counts WHERE reason = 'stale_term'");
    }

    /** The log's entries: PostgreSQL continues a message's further lines with a tab. */
    private static List<String> entries(String log) {
        List<String> entries = new ArrayList<>();
        for (String line : log.split("\n", -1)) {
            if (line.startsWith("\t") && !entries.isEmpty()) {
                entries.set(entries.size() - 1, entries.get(entries.size() - 1) + "\n" + line);
            } else {
                entries.add(line);
            }
        }
        return entries;
    }

    private static String newLog(PostgresServer server, long from) throws Exception {
        byte[] all = Files.readAllBytes(server.logFile());
        int start = (int) Math.min(from, all.length);
        return new String(all, start, all.length - start, StandardCharsets.UTF_8);
    }
}
