package dev.fenceline.migrations;

import static dev.fenceline.migrations.AuditFixture.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.Processes;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Managed PostgreSQL: the schema owner is no superuser (it has CREATEROLE, as RDS's or Cloud SQL's admin role has),
 * every login needs a password, dblink is installed by the administrator. The owner sets the audit writer up once;
 * raw stale writes are then audited over TCP and from the local socket, as fencing_auditor_writer.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AuditManagedDatabaseIT {
    private static final String OWNER = "audit_owner";
    private static final String OWNER_PASSWORD = "owner-password-0123456789";

    private PostgresServer server;
    private AuditFixture f;

    @BeforeAll
    void start() throws SQLException {
        server = AuditFixture.startPasswordServer(40);
        f = AuditFixture.managed(server, "audit_managed", OWNER, OWNER_PASSWORD);
        try (Connection c = f.asOwner();
                Statement s = c.createStatement()) {
            assertThat(text(s, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
                    .isEqualTo("f");
            assertThat(text(s, "SELECT fencing.audit_path()"))
                    .startsWith("server log and fencing.rejection_counts only");
            assertThat(text(s, "SELECT fencing.configure_audit_writer()"))
                    .contains("fencing_auditor_writer at 127.0.0.1:");
        }
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

    private static SQLException rejected(Statement s, String sql, String sqlState) {
        SQLException[] seen = new SQLException[1];
        assertThatThrownBy(() -> s.execute(sql)).as(sql).isInstanceOfSatisfying(SQLException.class, e -> {
            assertThat(e.getSQLState()).isEqualTo(sqlState);
            seen[0] = e;
        });
        return seen[0];
    }

    @Test
    void staleAndTermlessRawWritesAreAuditedOverTcpAndOnTheSocketWithoutASuperuser() throws Exception {
        try (Connection c = f.asOwner();
                Statement s = c.createStatement()) {
            assertThat(text(s, "SELECT fencing.audit_path()"))
                    .isEqualTo("dblink as fencing_auditor_writer (foreign server fencing_audit_loopback)");
        }
        try (Connection c = f.asApp("managed-tcp");
                Statement s = c.createStatement()) {
            assertThat(rejected(s, "INSERT INTO payment VALUES (1, 1)", "FL002").getMessage())
                    .contains("audited=t");
            s.execute("SET fencing.term = '3'");
            assertThat(rejected(s, "UPDATE payment SET amount = 1", "FL001").getMessage())
                    .contains("audited=t");
        }
        Processes.Result r = f.psqlOnSocket("SET fencing.term = '2'; DELETE FROM payment", "managed-socket");
        assertThat(r.exitCode()).as(r.stderr()).isNotZero();
        assertThat(r.stderr()).contains("stale term 2").contains("audited=t");

        assertThat(f.text(
                        "SELECT string_agg(reason || ':' || coalesce(offered_term::text, '-') || ':' || highest_accepted"
                                + " || ':' || operation || ':' || db_user || ':' || application_name || ':' || source, ','"
                                + " ORDER BY id) FROM fencing.rejected_write"))
                .isEqualTo("no_term:-:5:INSERT:audit_app:managed-tcp:trigger,"
                        + "stale_term:3:5:UPDATE:audit_app:managed-tcp:trigger,"
                        + "stale_term:2:5:DELETE:audit_app:managed-socket:trigger");
        assertThat(f.text("SELECT sum(trigger_not_audited) FROM fencing.rejection_counts"))
                .isEqualTo("0");
    }

    @Test
    void theOwnerCannotBeTrickedIntoExposingTheAuditConnection() throws Exception {
        try (Connection c = f.asSuperuser();
                Statement s = c.createStatement()) {
            s.execute("GRANT EXECUTE ON FUNCTION fencing.dblink_exec(text, text) TO PUBLIC");
            try (Connection o = f.asOwner();
                    Statement so = o.createStatement()) {
                assertThat(rejected(so, "SELECT fencing.configure_audit_writer()", "FL003")
                                .getMessage())
                        .contains("dblink_exec", "PUBLIC");
                assertThat(text(so, "SELECT fencing.audit_path()")).contains("executable by PUBLIC");
            } finally {
                s.execute("REVOKE EXECUTE ON FUNCTION fencing.dblink_exec(text, text) FROM PUBLIC");
            }
        }
    }

    @Test
    void settingsAreValidatedForTheOwnerToo() throws Exception {
        try (Connection c = f.asOwner();
                Statement s = c.createStatement()) {
            assertThat(rejected(
                                    s,
                                    "UPDATE fencing.settings SET value = '5 secs please' WHERE name = 'advance_timeout'",
                                    "FL003")
                            .getMessage())
                    .contains("advance_timeout", "'5 secs please'");
            assertThat(text(s, "SELECT value FROM fencing.settings WHERE name = 'advance_timeout'"))
                    .isEqualTo("5s");
        }
    }
}
