package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.TestDatabase;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * What the trigger's audit trusts about its dblink connection named fencing_audit, seen from an application login
 * that a DBA granted dblink_connect / dblink_exec directly (not through PUBLIC, fencing_app or fencing_break_glass,
 * the only grantees fencing.audit_dblink_refusal() looks at), and what a hung audit target costs a canceled statement.
 */
class AuditConnectionTrustIT {

    @Test
    void anAuditConnectionThatTheLoginPreOpenedElsewhereIsNeverReportedAsAudited() throws Exception {
        try (PostgresServer server = AuditFixture.startPasswordServer(30);
                AuditFixture f = AuditFixture.superuserOwned(server, "audit_trust", true);
                TestDatabase decoy = server.createDatabase("audit_decoy")) {
            grantDblinkToTheLogin(f);
            try (Connection c = server.superuserConnection(decoy.name());
                    Statement s = c.createStatement()) {
                s.execute("CREATE SCHEMA fencing AUTHORIZATION " + AuditFixture.APP);
                s.execute(
                        "CREATE FUNCTION fencing.append_trigger_rejection(text, bigint, bigint, text, text, text, text, text, text)"
                                + " RETURNS bigint LANGUAGE sql AS 'SELECT 424242::bigint'");
                s.execute(
                        "ALTER FUNCTION fencing.append_trigger_rejection(text, bigint, bigint, text, text, text, text, text, text)"
                                + " OWNER TO " + AuditFixture.APP);
            }
            try (Connection app = f.asApp("pre-opened");
                    Statement s = app.createStatement()) {
                s.execute("SELECT fencing.dblink_connect('fencing_audit', 'host=127.0.0.1 port=" + server.port()
                        + " dbname=" + decoy.name() + " user=" + AuditFixture.APP + " password="
                        + AuditFixture.APP_PASSWORD + "')");
                s.execute("SET fencing.term = '2'");
                String message = staleWriteMessage(s);
                long rows =
                        f.count("SELECT count(*) FROM fencing.rejected_write WHERE application_name = 'pre-opened'");
                assertThat(message.contains("audited=t") && rows == 0)
                        .as("reported audited but no row here (%s rows): %s", rows, message)
                        .isFalse();
            }
        }
    }

    @Test
    void theLoginCannotSendItsOwnRowsOverTheAuditConnection() throws Exception {
        try (PostgresServer server = AuditFixture.startPasswordServer(30);
                AuditFixture f = AuditFixture.superuserOwned(server, "audit_forge", true)) {
            grantDblinkToTheLogin(f);
            try (Connection app = f.asApp("forger");
                    Statement s = app.createStatement()) {
                s.execute("SET fencing.term = '3'");
                staleWriteMessage(s); // opens the audit connection as fencing_auditor_writer, kept by this backend
                try {
                    s.execute(
                            "SELECT fencing.dblink_exec('fencing_audit', $$SELECT fencing.append_trigger_rejection("
                                    + "'ledger', 4, 5, 'leader-x', 'public.payment', 'DELETE', 'stale_term', 'dba_alice', 'psql')$$)");
                } catch (SQLException e) {
                    // dblink_exec refuses the SELECT's result only after the far end committed it
                }
            }
            assertThat(f.count("SELECT count(*) FROM fencing.rejected_write WHERE db_user = 'dba_alice'"))
                    .as("rows the application login wrote in another role's name")
                    .isZero();
        }
    }

    @Test
    void aCanceledAuditDoesNotConnectAgainToATargetThatAlreadyTimedOut() throws Exception {
        List<Socket> held = new CopyOnWriteArrayList<>();
        AtomicInteger accepted = new AtomicInteger();
        try (ServerSocket hung = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
                PostgresServer server = AuditFixture.startPasswordServer(30);
                AuditFixture f = AuditFixture.superuserOwned(server, "audit_hung", true)) {
            Thread acceptor = new Thread(() -> {
                try {
                    while (true) {
                        held.add(hung.accept()); // a stopped server: the handshake completes, nothing answers
                        accepted.incrementAndGet();
                    }
                } catch (IOException closed) {
                    // test over
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            try (Connection c = f.asSuperuser();
                    Statement s = c.createStatement()) {
                s.execute("ALTER SERVER fencing_audit_loopback OPTIONS (SET host '127.0.0.1', SET port '"
                        + hung.getLocalPort() + "')");
            }
            try (Connection app = f.asApp("hung-target");
                    Statement s = app.createStatement()) {
                s.execute("SET statement_timeout = '100ms'");
                s.execute("SET fencing.term = '1'");
                String message = staleWriteMessage(s);
                assertThat(message).contains("audited=t");
            }
            assertThat(accepted.get())
                    .as("connections the audit opened to the hung target for one rejection")
                    .isEqualTo(1);
        } finally {
            for (Socket s : held) {
                s.close();
            }
        }
    }

    private static void grantDblinkToTheLogin(AuditFixture f) throws SQLException {
        try (Connection c = f.asSuperuser();
                Statement s = c.createStatement()) {
            s.execute(
                    "GRANT EXECUTE ON FUNCTION fencing.dblink_connect(text, text), fencing.dblink_exec(text, text) TO "
                            + AuditFixture.APP);
            assertThat(AuditFixture.text(s, "SELECT fencing.audit_dblink_refusal() IS NULL"))
                    .isEqualTo("t");
        }
    }

    private static String staleWriteMessage(Statement s) {
        try {
            s.execute("INSERT INTO payment VALUES (1, 1)");
        } catch (SQLException e) {
            assertThat(e.getSQLState()).as(e.getMessage()).isEqualTo("FL001");
            return e.getMessage();
        }
        return fail("the stale write was accepted");
    }
}
