package dev.fenceline.migrations;

import static dev.fenceline.migrations.AuditFixture.APP;
import static dev.fenceline.migrations.AuditFixture.APP_PASSWORD;
import static dev.fenceline.migrations.AuditFixture.TABLE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.PostgresStandby;
import dev.fenceline.testkit.Processes;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * The trigger's audit after a failover: the foreign server fencing_audit_loopback still names the old primary's
 * address, but a rejection on the promoted server is audited there all the same (through the promoted server's own
 * address), without an operator re-pointing anything first.
 */
class AuditFollowsTheServerIT {

    @Test
    void aRejectionOnThePromotedStandbyIsAuditedThereWithoutRePointingTheAuditWriter() throws Exception {
        try (PostgresServer primary = PostgresServer.start(PostgresServer.Options.defaults())) {
            AuditFixture f = AuditFixture.superuserOwned(primary, "audit_failover", true);
            String database = f.db.name();
            try (PostgresServer standby =
                    PostgresStandby.start(primary, "audit_standby", PostgresStandby.Mode.SYNCHRONOUS)) {
                primary.crash();
                standby.promote();

                String url = "jdbc:postgresql://" + standby.host() + ":" + standby.port() + "/" + database;
                try (Connection c = DriverManager.getConnection(url, appLogin("after-failover"));
                        Statement s = c.createStatement()) {
                    s.execute("SET fencing.term = '4'");
                    assertThatThrownBy(() -> s.execute("INSERT INTO payment VALUES (1, 1)"))
                            .isInstanceOfSatisfying(SQLException.class, e -> {
                                assertThat(e.getSQLState()).isEqualTo("FL001");
                                assertThat(e.getMessage()).contains("audited=t");
                            });
                }
                try (Connection c = standby.superuserConnection(database);
                        Statement s = c.createStatement()) {
                    assertThat(AuditFixture.text(
                                    s,
                                    "SELECT count(*) FROM fencing.rejected_write WHERE resource = 'ledger'"
                                            + " AND reason = 'stale_term' AND source = 'trigger' AND offered_term = 4 AND highest_accepted = 5"
                                            + " AND table_name = '" + TABLE
                                            + "' AND application_name = 'after-failover'"))
                            .isEqualTo("1");
                    assertThat(AuditFixture.text(s, "SELECT fencing.audit_path()"))
                            .startsWith("dblink as fencing_auditor_writer (this server's own address 127.0.0.1:"
                                    + standby.port());
                }
            }
        }
    }

    /**
     * A split brain: the standby is promoted while the old primary keeps running and still accepts the audit writer's
     * login. The foreign server names the old primary, so a connection to it succeeds; the row must not be committed
     * there (a diverged database nobody audits any more) but on the promoted server, once.
     */
    @Test
    void aRejectionOnThePromotedServerIsAuditedThereAndNotOnTheOldPrimaryThatStillRuns() throws Exception {
        try (PostgresServer primary = PostgresServer.start(PostgresServer.Options.defaults())) {
            AuditFixture f = AuditFixture.superuserOwned(primary, "audit_split", true);
            String database = f.db.name();
            try (PostgresServer standby =
                    PostgresStandby.start(primary, "audit_split_standby", PostgresStandby.Mode.ASYNCHRONOUS)) {
                standby.promote(); // the old primary is not stopped

                String url = "jdbc:postgresql://" + standby.host() + ":" + standby.port() + "/" + database;
                for (int attempt = 1; attempt <= 2; attempt++) { // the second reuses the backend's kept connection
                    try (Connection c = DriverManager.getConnection(url, appLogin("split-brain"));
                            Statement s = c.createStatement()) {
                        s.execute("SET fencing.term = '4'");
                        for (int write = 1; write <= 2; write++) {
                            int id = attempt * 10 + write;
                            assertThatThrownBy(() -> s.execute("INSERT INTO payment VALUES (" + id + ", 1)"))
                                    .isInstanceOfSatisfying(SQLException.class, e -> {
                                        assertThat(e.getSQLState()).isEqualTo("FL001");
                                        assertThat(e.getMessage()).contains("audited=t");
                                    });
                        }
                    }
                }
                String rows = "SELECT count(*) FROM fencing.rejected_write WHERE resource = 'ledger'"
                        + " AND reason = 'stale_term' AND source = 'trigger' AND application_name = 'split-brain'";
                try (Connection c = standby.superuserConnection(database);
                        Statement s = c.createStatement()) {
                    assertThat(AuditFixture.text(s, rows)).isEqualTo("4");
                    assertThat(AuditFixture.text(
                                    s,
                                    "SELECT trigger_not_audited FROM fencing.rejection_counts"
                                            + " WHERE reason = 'stale_term'"))
                            .isEqualTo("0");
                    // The application role can neither compute the condition for another backend nor send it.
                    assertThat(AuditFixture.text(
                                    s,
                                    "SELECT has_function_privilege('" + APP
                                            + "', 'fencing.audit_here_condition()', 'EXECUTE')"))
                            .isEqualTo("f");
                    assertThat(AuditFixture.text(s, "SELECT fencing.audit_path()"))
                            .startsWith("dblink as fencing_auditor_writer (this server's own address 127.0.0.1:"
                                    + standby.port())
                            .contains("reaches another server");
                }

                // A client on the local socket: the backend has no address of this server to follow, so the foreign
                // server is the only target, and it reaches the old primary. Nothing is written there; the rejection
                // is counted and logged here, with the reason.
                Processes.Result psql = Processes.run(
                        List.of(
                                standby.binDir().resolve("psql").toString(),
                                "-X",
                                "-v",
                                "ON_ERROR_STOP=1",
                                "-h",
                                standby.socketDirectory().toString(),
                                "-p",
                                Integer.toString(standby.port()),
                                "-U",
                                APP,
                                "-d",
                                database,
                                "-c",
                                "SET fencing.term = '4'",
                                "-c",
                                "INSERT INTO payment VALUES (99, 1)"),
                        Duration.ofSeconds(30),
                        null,
                        Map.of("PGPASSWORD", APP_PASSWORD, "PGAPPNAME", "split-brain-socket"));
                assertThat(psql.ok()).as(psql.stdout()).isFalse();
                assertThat(psql.stderr()).contains("audited=f");
                try (Connection c = standby.superuserConnection(database);
                        Statement s = c.createStatement()) {
                    assertThat(AuditFixture.text(
                                    s,
                                    "SELECT count(*) FROM fencing.rejected_write"
                                            + " WHERE application_name = 'split-brain-socket'"))
                            .isEqualTo("0");
                    assertThat(AuditFixture.text(
                                    s,
                                    "SELECT trigger_not_audited FROM fencing.rejection_counts"
                                            + " WHERE reason = 'stale_term'"))
                            .isEqualTo("1");
                }
                assertThat(Files.readString(standby.logFile()))
                        .contains("fencing: rejected write not audited in"
                                + " fencing.rejected_write (the audit connection reached another server, not this one");

                try (Connection c = primary.superuserConnection(database);
                        Statement s = c.createStatement()) {
                    assertThat(AuditFixture.text(s, "SELECT pg_is_in_recovery()"))
                            .isEqualTo("f");
                    assertThat(AuditFixture.text(s, rows)).isEqualTo("0");
                    assertThat(AuditFixture.text(s, "SELECT count(*) FROM fencing.rejected_write"))
                            .isEqualTo("0");
                    assertThat(AuditFixture.text(s, "SELECT fencing.audit_path()"))
                            .isEqualTo("dblink as fencing_auditor_writer (foreign server fencing_audit_loopback)");
                }
            }
        }
    }

    private static Properties appLogin(String applicationName) {
        Properties p = new Properties();
        p.setProperty("user", APP);
        p.setProperty("password", APP_PASSWORD);
        p.setProperty("ApplicationName", applicationName);
        return p;
    }
}
