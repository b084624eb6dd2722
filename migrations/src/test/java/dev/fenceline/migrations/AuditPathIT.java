package dev.fenceline.migrations;

import static dev.fenceline.migrations.AuditFixture.TABLE;
import static dev.fenceline.migrations.AuditFixture.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.Processes;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The trigger's audit on a server that asks for passwords (scram-sha-256), schema owned by the superuser: raw stale
 * writes over TCP and on the local socket are audited through one kept connection per backend, as the
 * least-privileged fencing_auditor_writer; without dblink every field still reaches the server log and a counter.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AuditPathIT {
    private PostgresServer server;
    private AuditFixture f;

    @BeforeAll
    void start() throws SQLException {
        server = AuditFixture.startPasswordServer(40);
        f = AuditFixture.superuserOwned(server, "audit_path", false);
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

    private long staleRows(String applicationName) throws SQLException {
        return f.count("SELECT count(*) FROM fencing.rejected_write WHERE resource = 'ledger' AND reason = 'stale_term'"
                + " AND source = 'trigger' AND offered_term = 4 AND highest_accepted = 5 AND table_name = '" + TABLE
                + "' AND operation = 'INSERT' AND db_user = 'audit_app' AND application_name = '" + applicationName
                + "'");
    }

    @Test
    void staleRawWriteOverTcpWithPasswordIsAuditedAsTheLeastPrivilegedWriter() throws Exception {
        try (Connection c = f.asApp("tcp-writer");
                Statement s = c.createStatement()) {
            s.execute("SET fencing.term = '4'");
            SQLException e = rejected(s, "INSERT INTO payment VALUES (1, 1)", "FL001");
            assertThat(e.getMessage()).contains("audited=t");
        }
        assertThat(staleRows("tcp-writer")).isEqualTo(1);
        assertThat(f.text("SELECT fencing.audit_path()"))
                .isEqualTo("dblink as fencing_auditor_writer (foreign server fencing_audit_loopback)");
        // The audit role can append through its function, and nothing else.
        assertThat(f.text("SELECT rolsuper::text || rolcreaterole::text || rolcreatedb::text FROM pg_roles"
                        + " WHERE rolname = 'fencing_auditor_writer'"))
                .isEqualTo("falsefalsefalse");
        assertThat(f.text("SELECT has_table_privilege('fencing_auditor_writer', 'fencing.rejected_write', 'INSERT')"
                        + " OR has_table_privilege('fencing_auditor_writer', 'fencing.rejected_write', 'SELECT')"
                        + " OR has_function_privilege('fencing_auditor_writer', 'fencing.record_rejection(text, bigint, bigint,"
                        + " text, text, text, text, jsonb, text, text, text, text)', 'EXECUTE')"))
                .isEqualTo("f");
    }

    @Test
    void staleRawWriteOnTheLocalSocketWithPasswordIsAudited() throws Exception {
        Processes.Result r = f.psqlOnSocket("SET fencing.term = '4'; INSERT INTO payment VALUES (2, 1)", "socket-psql");
        assertThat(r.exitCode()).as(r.stderr()).isNotZero();
        assertThat(r.stderr()).contains("stale term 4").contains("audited=t");
        assertThat(staleRows("socket-psql")).isEqualTo(1);
    }

    @Test
    void oneAuditConnectionPerBackendIsKeptReusedAndReopenedOnceWhenItDied() throws Exception {
        String auditBackends = "SELECT string_agg(pid::text, ',') FROM pg_stat_activity"
                + " WHERE application_name = 'fencing_audit' AND usename = 'fencing_auditor_writer'"
                + " AND datname = current_database()";
        try (Connection c = f.asApp("kept-connection");
                Statement s = c.createStatement();
                Connection dba = f.asSuperuser();
                Statement d = dba.createStatement()) {
            s.execute("SET fencing.term = '4'");
            rejected(s, "INSERT INTO payment VALUES (3, 1)", "FL001");
            String first = text(d, auditBackends);
            assertThat(first)
                    .as("one audit connection after the first rejection")
                    .isNotNull()
                    .doesNotContain(",");
            for (int i = 0; i < 20; i++) {
                rejected(s, "INSERT INTO payment VALUES (3, 1)", "FL001");
            }
            assertThat(text(d, auditBackends)).as("the same connection, kept").isEqualTo(first);
            assertThat(staleRows("kept-connection")).isEqualTo(21);

            // A DBA terminates it: the next rejection reopens it once and is still audited.
            d.execute("SELECT pg_terminate_backend(" + first + ")");
            awaitGone(d, first);
            SQLException e = rejected(s, "INSERT INTO payment VALUES (3, 1)", "FL001");
            assertThat(e.getMessage()).contains("audited=t");
            assertThat(staleRows("kept-connection")).isEqualTo(22);
            String second = text(d, auditBackends);
            assertThat(second).isNotNull().isNotEqualTo(first).doesNotContain(",");
        }
    }

    @Test
    void idleAuditConnectionsAreClosedByTheServer() throws Exception {
        assertThat(f.text("SELECT array_to_string(s.setconfig, ',') FROM pg_db_role_setting s"
                        + " WHERE s.setrole = 'fencing_auditor_writer'::regrole AND s.setdatabase = 0"))
                .contains("idle_session_timeout=5min");
    }

    @Test
    void claimsForEveryReasonAreCheckedAgainstTheSessionAndTheMark() throws Exception {
        // No application role may execute the trigger's audit entry; its claim checks are a second line of defence,
        // exercised here by a role granted it for this test only.
        String signature = "fencing.audit_autonomously(text, bigint, text, text, text, text)";
        try (Connection c = f.asSuperuser();
                Statement s = c.createStatement()) {
            s.execute("GRANT EXECUTE ON FUNCTION " + signature + " TO audit_app");
        }
        try {
            checkClaims();
        } finally {
            try (Connection c = f.asSuperuser();
                    Statement s = c.createStatement()) {
                s.execute("REVOKE EXECUTE ON FUNCTION " + signature + " FROM audit_app");
            }
        }
    }

    private void checkClaims() throws Exception {
        String audit = "SELECT fencing.audit_autonomously('ledger', %s, %s, %s, %s, '%s')";
        try (Connection c = f.asApp("claims");
                Statement s = c.createStatement()) {
            // invalid_term: true only while this session's fencing.term is not a positive bigint.
            s.execute("SET fencing.term = '7'");
            s.execute(String.format(audit, "NULL", "NULL", "'public.payment'", "'INSERT'", "invalid_term"));
            assertThat(counted("invalid_term")).isZero();
            s.execute("SET fencing.term = '1e3'");
            s.execute(String.format(audit, "NULL", "NULL", "'public.payment'", "'INSERT'", "invalid_term"));
            assertThat(counted("invalid_term")).isEqualTo(1);
            s.execute("RESET fencing.term");
            // term_jump: more than max_term_jump (default 1000000) above the mark 5.
            s.execute(String.format(audit, "1000005", "NULL", "NULL", "'ENTER'", "term_jump"));
            assertThat(counted("term_jump")).isZero();
            s.execute(String.format(audit, "1000006", "NULL", "NULL", "'ENTER'", "term_jump"));
            assertThat(counted("term_jump")).isEqualTo(1);
            // unscoped_term: above the mark while fencing.resource does not name the resource.
            s.execute("SET fencing.resource = 'ledger'");
            s.execute(String.format(audit, "6", "NULL", "'public.payment'", "'UPDATE'", "unscoped_term"));
            assertThat(counted("unscoped_term")).isZero();
            s.execute("SET fencing.resource = 'elsewhere'");
            s.execute(String.format(audit, "6", "NULL", "'public.payment'", "'UPDATE'", "unscoped_term"));
            assertThat(counted("unscoped_term")).isEqualTo(1);
            // term_conflict: the mark's own term, offered by another leader than the one holding it.
            assertThat(text(s, String.format(audit, "5", "'leader-5'", "NULL", "'ENTER'", "term_conflict")))
                    .isEqualTo("f");
            assertThat(text(s, String.format(audit, "5", "'leader-x'", "NULL", "'ENTER'", "term_conflict")))
                    .isEqualTo("t");
        }
        assertThat(counted("term_conflict")).isEqualTo(1);
        assertThat(f.text("SELECT offered_term || ' ' || highest_accepted || ' ' || leader_id || ' ' || db_user"
                        + " FROM fencing.rejected_write WHERE reason = 'term_conflict'"))
                .isEqualTo("5 5 leader-x audit_app");
    }

    private long counted(String reason) throws SQLException {
        return f.count("SELECT trigger_counted FROM fencing.rejection_counts WHERE reason = '" + reason + "'");
    }

    private static void awaitGone(Statement d, String pid) throws SQLException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            if ("0".equals(text(d, "SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid))) {
                return;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("backend " + pid + " still alive 10 s after pg_terminate_backend");
    }

    @Test
    void withoutDblinkTheRejectionIsCountedDespiteTheRollbackAndLoggedWithEveryField() throws Exception {
        try (AuditFixture bare = AuditFixture.superuserOwned(server, "audit_no_dblink", false)) {
            try (Connection c = bare.asSuperuser();
                    Statement s = c.createStatement()) {
                s.execute("DROP EXTENSION dblink CASCADE");
            }
            assertThat(bare.text("SELECT fencing.audit_path()"))
                    .startsWith("server log and fencing.rejection_counts only")
                    .contains("dblink is not installed");
            try (Connection c = bare.asApp("no-dblink-writer");
                    Statement s = c.createStatement()) {
                s.execute("SET fencing.term = '4'");
                SQLException e = rejected(s, "UPDATE payment SET amount = 2", "FL001");
                assertThat(e.getMessage()).contains("audited=f");
            }
            assertThat(bare.count("SELECT count(*) FROM fencing.rejected_write"))
                    .isZero();
            assertThat(bare.text("SELECT trigger_counted || '/' || trigger_rows || '/' || trigger_not_audited"
                            + " FROM fencing.rejection_counts WHERE reason = 'stale_term'"))
                    .isEqualTo("1/0/1");
            String logged = "fencing: rejected write not audited in fencing.rejected_write (dblink is not installed):"
                    + " resource='ledger' offered_term=4 highest_accepted=5 leader_id=NULL table='public.payment'"
                    + " operation='UPDATE' reason='stale_term' db_user='audit_app' application_name='no-dblink-writer'"
                    + " rejected_at=";
            assertThat(Files.readString(server.logFile())).contains(logged);
            // Readable by the audit's readers.
            try (Connection c = bare.asSuperuser();
                    Statement s = c.createStatement()) {
                s.execute("SET ROLE fencing_auditor");
                assertThat(text(s, "SELECT sum(trigger_counted) FROM fencing.rejection_counts"))
                        .isEqualTo("1");
            }
        }
    }

    @Test
    void applicationRolesCannotForgeAuditRows() throws Exception {
        long before = f.count("SELECT count(*) FROM fencing.rejected_write");
        try (Connection c = f.asApp("forger");
                Statement s = c.createStatement()) {
            // A term that was never refused (above the mark), an unknown resource, a reason the state contradicts.
            rejected(
                    s,
                    "SELECT fencing.record_rejection('ledger', 7, 9, 'x', 'public.payment', 'INSERT', 'k', NULL)",
                    "FL003");
            rejected(
                    s,
                    "SELECT fencing.record_rejection('ledger', 5, 5, 'leader-5', 'public.payment', 'INSERT', 'k', NULL)",
                    "FL003");
            rejected(
                    s,
                    "SELECT fencing.record_rejection('nowhere', 1, 9, 'x', 'public.payment', 'INSERT', 'k', NULL)",
                    "FL003");
            // Reasons only the trigger observes, claimed by a caller with any term.
            for (String reason : new String[] {"invalid_leader_id", "advance_isolation"}) {
                rejected(
                        s,
                        "SELECT fencing.record_rejection('ledger', 999, NULL, repeat('x', 300), 'public.payment',"
                                + " 'INSERT', 'k', NULL, '" + reason + "')",
                        "FL003");
            }
            // A term above the mark, claimed stale from a REPEATABLE READ snapshot taken before any advance.
            s.execute("BEGIN ISOLATION LEVEL REPEATABLE READ");
            rejected(
                    s,
                    "SELECT fencing.record_rejection('ledger', 999999999, NULL, 'x', 'public.payment', 'INSERT', 'k',"
                            + " NULL)",
                    "FL003");
            s.execute("ROLLBACK");
            s.execute("SET fencing.term = '5'");
            rejected(
                    s,
                    "SELECT fencing.record_rejection('ledger', NULL, 5, 'x', 'public.payment', 'INSERT', 'k', NULL,"
                            + " 'no_term')",
                    "FL003");
            // The trigger's entry point is not theirs to call at all.
            rejected(
                    s,
                    "SELECT fencing.audit_autonomously('ledger', 7, 'x', 'public.payment', 'INSERT', 'stale_term')",
                    "42501");
            rejected(
                    s,
                    "SELECT fencing.audit_autonomously('ledger', NULL, 'x', 'public.payment', 'DELETE', 'no_term')",
                    "42501");
            rejected(
                    s,
                    "SELECT fencing.audit_autonomously('ledger', 4, 'x', 'public.elsewhere', 'INSERT', 'stale_term')",
                    "42501");
            assertThat(f.count("SELECT count(*) FROM fencing.rejected_write")).isEqualTo(before);

            // A true claim is recorded, but who, from where and against which mark is the database's word.
            s.execute("RESET fencing.term");
            s.execute("SELECT fencing.record_rejection('ledger', 4, 99, 'x', 'public.payment', 'INSERT', 'k', NULL,"
                    + " 'stale_term', 'trigger', 'alice', 'someone-else')");
            assertThat(f.text("SELECT source || ' ' || db_user || ' ' || application_name || ' ' || highest_accepted"
                            + " FROM fencing.rejected_write WHERE business_key = 'k'"))
                    .isEqualTo("writer audit_app forger 5");
            // Writing the table directly stays impossible.
            rejected(s, "INSERT INTO fencing.rejected_write (resource) VALUES ('ledger')", "42501");
            rejected(
                    s,
                    "SELECT fencing.append_trigger_rejection('ledger', 4, 5, 'x', 'public.payment', 'INSERT',"
                            + " 'stale_term', 'alice', 'x')",
                    "42501");
        }
    }

    @Test
    void breakGlassMembersCannotLogInSomeoneElsesName() throws Exception {
        try (Connection c = f.asSuperuser();
                Statement s = c.createStatement()) {
            s.execute("DROP ROLE IF EXISTS audit_alice");
            s.execute("CREATE ROLE audit_alice NOLOGIN IN ROLE fencing_break_glass");
        }
        f.server.createLoginRole("audit_bob", "bob-password-0123456789", "fencing_break_glass");
        long before = f.count("SELECT count(*) FROM fencing.break_glass_log");
        try (Connection c = f.as("audit_bob", "bob-password-0123456789", "bob");
                Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            // Only the guard logs break-glass (it runs as the owner): no member may call the log itself.
            rejected(
                    s,
                    "SELECT fencing.log_break_glass('ledger', 'public.payment', 'UPDATE', 'fix', 'audit_bob')",
                    "42501");
            c.rollback();
            s.execute("SET LOCAL fencing.break_glass = 'INC-7'");
            rejected(
                    s,
                    "SELECT fencing.log_break_glass('ledger', 'public.payment', 'UPDATE', 'fix', 'audit_alice')",
                    "42501");
            c.rollback();
        }
        assertThat(f.count("SELECT count(*) FROM fencing.break_glass_log")).isEqualTo(before);
    }

    @Test
    void settingsRefuseBadValuesNamingTheSettingTheRangeAndTheValue() throws Exception {
        try (Connection c = f.asSuperuser();
                Statement s = c.createStatement()) {
            assertThat(rejected(
                                    s,
                                    "UPDATE fencing.settings SET value = '5 secs please' WHERE name = 'advance_timeout'",
                                    "FL003")
                            .getMessage())
                    .contains("advance_timeout", "100ms", "10min", "'5 secs please'");
            rejected(s, "UPDATE fencing.settings SET value = '50ms' WHERE name = 'advance_timeout'", "FL003");
            rejected(s, "UPDATE fencing.settings SET value = '11 min' WHERE name = 'advance_timeout'", "FL003");
            assertThat(rejected(
                                    s,
                                    "UPDATE fencing.settings SET value = 'lots' WHERE name = 'payload_max_bytes'",
                                    "FL003")
                            .getMessage())
                    .contains("payload_max_bytes", "0 to 1048576", "'lots'");
            rejected(s, "UPDATE fencing.settings SET value = '1048577' WHERE name = 'payload_max_bytes'", "FL003");
            rejected(s, "UPDATE fencing.settings SET value = '-1' WHERE name = 'payload_max_bytes'", "FL003");
            assertThat(rejected(
                                    s,
                                    "INSERT INTO fencing.settings (name, value, description) VALUES ('max_term_jump', '0', 'x')"
                                            + " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                                    "FL003")
                            .getMessage())
                    .contains("max_term_jump", "1 to 9223372036854775807", "'0'");
            rejected(
                    s,
                    "INSERT INTO fencing.settings (name, value, description) VALUES ('max_term_jump', '9223372036854775808', 'x')"
                            + " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                    "FL003");
            // The free-form audit connection string is gone and cannot come back.
            assertThat(text(s, "SELECT count(*) FROM fencing.settings WHERE name = 'audit_dblink_connstr'"))
                    .isEqualTo("0");
            rejected(
                    s,
                    "INSERT INTO fencing.settings (name, value, description) VALUES ('audit_dblink_connstr', 'host=evil', 'x')",
                    "FL003");
            assertThat(text(s, "SELECT value FROM fencing.settings WHERE name = 'advance_timeout'"))
                    .isEqualTo("5s");
            assertThat(text(s, "SELECT value FROM fencing.settings WHERE name = 'payload_max_bytes'"))
                    .isEqualTo("8192");
            // Good values pass, also for fencing_admin.
            s.execute("SET ROLE fencing_admin");
            s.execute("UPDATE fencing.settings SET value = '10min' WHERE name = 'advance_timeout'");
            rejected(s, "UPDATE fencing.settings SET value = 'soon' WHERE name = 'advance_timeout'", "FL003");
            s.execute("UPDATE fencing.settings SET value = '5s' WHERE name = 'advance_timeout'");
            s.execute("UPDATE fencing.settings SET value = '0' WHERE name = 'payload_max_bytes'");
            s.execute("UPDATE fencing.settings SET value = '8192' WHERE name = 'payload_max_bytes'");
        }
    }

    /**
     * dblink keeps named connections per backend, not per role: an application role that may run
     * {@code dblink_connect} can open a connection named {@code fencing_audit} to a database of its own before its
     * stale write, and the audit would reuse it, send the row there and report {@code audited=t}. Then dblink does not
     * count as a safe audit path: the rejection is reported as not audited (and logged with every field) instead.
     */
    @Test
    void applicationRolesCannotDivertTheAuditConnection() throws Exception {
        String schema = f.text("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'dblink'");
        String connect = schema + ".dblink_connect(text, text)";
        dev.fenceline.testkit.TestDatabase decoy = server.createDatabase("audit_decoy");
        try (Connection c = decoy.dataSource().getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE SCHEMA fencing");
            s.execute("CREATE FUNCTION fencing.append_trigger_rejection(text, bigint, bigint, text, text, text,"
                    + " text, text, text) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'");
            s.execute("GRANT USAGE ON SCHEMA fencing TO PUBLIC");
        }
        try (Connection dba = f.asSuperuser();
                Statement d = dba.createStatement()) {
            d.execute("GRANT EXECUTE ON FUNCTION " + connect + " TO PUBLIC");
            try (Connection c = f.asApp("divert-writer");
                    Statement s = c.createStatement()) {
                s.execute("SELECT " + schema + ".dblink_connect('fencing_audit', 'host=127.0.0.1 port=" + server.port()
                        + " dbname=" + decoy.name() + " user=" + AuditFixture.APP + " password="
                        + AuditFixture.APP_PASSWORD + "')");
                s.execute("SET fencing.term = '4'");
                SQLException e = rejected(s, "INSERT INTO payment VALUES (1, 1)", "FL001");
                long rows =
                        f.count("SELECT count(*) FROM fencing.rejected_write WHERE application_name = 'divert-writer'");
                assertThat(e.getMessage())
                        .as("rejection with %s audit rows in this database", rows)
                        .contains(rows == 1 ? "audited=t" : "audited=f");
            } finally {
                d.execute("REVOKE EXECUTE ON FUNCTION " + connect + " FROM PUBLIC");
            }
        }
    }

    @Test
    void onlyTheOwnerDecidesWhereAuditsGoAndTheTargetIsThisDatabase() throws Exception {
        assertThat(
                        f.text(
                                "SELECT array_to_string(srvoptions, ' ') FROM pg_foreign_server WHERE srvname = 'fencing_audit_loopback'"))
                .contains("dbname=" + f.db.name());
        f.server.createLoginRole("audit_admin", "admin-password-0123456789", "fencing_admin");
        try (Connection c = f.as("audit_admin", "admin-password-0123456789", "admin");
                Statement s = c.createStatement()) {
            rejected(
                    s,
                    "SELECT fencing.configure_audit_writer('attacker-password-0123', 'evil.example', 5432)",
                    "42501");
            rejected(s, "ALTER SERVER fencing_audit_loopback OPTIONS (SET dbname 'postgres')", "42501");
            rejected(s, "SELECT umoptions FROM pg_user_mapping", "42501");
            assertThat(text(
                            s,
                            "SELECT coalesce(array_to_string(umoptions, ','), '') FROM pg_user_mappings"
                                    + " WHERE srvname = 'fencing_audit_loopback'"))
                    .doesNotContain("password");
        }
    }
}
