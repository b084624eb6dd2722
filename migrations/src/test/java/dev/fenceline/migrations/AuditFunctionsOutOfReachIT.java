package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.testkit.PostgresServer;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * {@code fencing.rejected_write} is evidence: a row claims that the database refused a write. Application roles must not
 * be able to append rows of their own choosing. The only entries into the audit an application role may execute are
 * the writer's documented one, {@code fencing.record_rejection} (it checks the claim and records source 'writer'), and
 * {@code fencing.enter} (it audits only its own refusal of the term just offered to it, with nothing the caller chose
 * but that term). The trigger's audit writer in particular (today {@code fencing.audit_autonomously}, which records
 * source 'trigger' rows for any table, operation and reason the caller names, as long as the claim is plausible) must
 * be executable by no application role.
 *
 * <p>On a server of its own with the audit writer configured (dblink), so that an audit function that may be executed
 * really commits its row.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AuditFunctionsOutOfReachIT {
    private static final String GLASS = "audit_reach_glass";
    private static final String GLASS_PASSWORD = "glass-password-0123456789";
    /** The allow-list: an application role may execute these functions that reach fencing.rejected_write. */
    private static final Set<String> ALLOWED = Set.of("record_rejection", "enter");

    private static final Pattern DIRECT_INSERT =
            Pattern.compile("(?is)insert\\s+into\\s+(fencing\\.)?\"?rejected_write\"?");

    private PostgresServer server;
    private AuditFixture f;

    @BeforeAll
    void setUp() throws SQLException {
        server = PostgresServer.start(PostgresServer.Options.defaults());
        f = AuditFixture.superuserOwned(server, "audit_reach", true);
        server.createLoginRole(GLASS, GLASS_PASSWORD, "fencing_break_glass");
    }

    @AfterAll
    void tearDown() {
        if (f != null) {
            f.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private long auditRows() throws SQLException {
        return f.count("SELECT count(*) FROM fencing.rejected_write");
    }

    /**
     * The writer's audit records what the writer says it was writing only as far as the database can check it: a table
     * protected for the resource (named with or without its schema) and an operation that is one upper-case word. A
     * fencing_app login naming another table or a phrase of its own gets a row with both NULL.
     */
    @Test
    void theWritersAuditKeepsOnlyATableProtectedForTheResourceAndAnOperationWord() throws Exception {
        String[][] cases = {
            {"'pg_catalog.pg_authid'", "'DROP DATABASE production'", "|"},
            {"'" + AuditFixture.TABLE + "'", "'UPDATE'", AuditFixture.TABLE + "|UPDATE"},
            {"'payment'", "'SETTLE_BATCH'", "payment|SETTLE_BATCH"},
            {"'public.not_a_table'", "'update'", "|"}
        };
        try (Connection c = f.asApp("writer-audit-claims");
                Statement s = c.createStatement()) {
            for (String[] claim : cases) {
                String id = AuditFixture.text(
                        s,
                        "SELECT fencing.record_rejection('" + AuditFixture.RESOURCE + "', 4," + " NULL, 'writer-a', "
                                + claim[0] + ", " + claim[1] + ", 'k', NULL)");
                assertThat(f.text("SELECT coalesce(table_name, '') || '|' || coalesce(operation, '')"
                                + " FROM fencing.rejected_write WHERE id = " + id))
                        .as("recorded table and operation for the claim %s, %s", claim[0], claim[1])
                        .isEqualTo(claim[2]);
            }
        }
    }

    /**
     * As a fencing_app login and as a fencing_break_glass login: a call of the trigger's audit writer claiming a stale
     * UPDATE of the protected table (term 4 below the mark 5: a claim the database would accept as true) fails with
     * 42501 and writes no row.
     */
    @Test
    void noApplicationLoginCanCallTheTriggersAuditWriterAndNoRowIsWritten() throws Exception {
        boolean exists = f.count("SELECT count(*) FROM pg_proc WHERE pronamespace = 'fencing'::regnamespace"
                        + " AND proname = 'audit_autonomously'")
                > 0;
        List<String> reached = new ArrayList<>();
        Map<String, String[]> logins = new LinkedHashMap<>();
        logins.put("fencing_app login " + AuditFixture.APP, new String[] {AuditFixture.APP, AuditFixture.APP_PASSWORD});
        logins.put("fencing_break_glass login " + GLASS, new String[] {GLASS, GLASS_PASSWORD});
        for (Map.Entry<String, String[]> login : logins.entrySet()) {
            long before = auditRows();
            String state;
            String message;
            try (Connection c = f.as(login.getValue()[0], login.getValue()[1], "forged-audit");
                    Statement s = c.createStatement()) {
                s.execute("SELECT fencing.audit_autonomously('" + AuditFixture.RESOURCE + "', 4, 'forger',"
                        + " 'public.payment', 'UPDATE', 'stale_term')");
                state = "none (the call returned)";
                message = "";
            } catch (SQLException e) {
                state = e.getSQLState();
                message = e.getMessage();
            }
            long written = auditRows() - before;
            boolean refused = "42501".equals(state) || (!exists && "42883".equals(state));
            if (!refused || written != 0) {
                reached.add(
                        login.getKey() + ": SQLSTATE " + state + " " + message + "; audit rows written: " + written);
            }
        }
        assertThat(reached)
                .as("application logins calling fencing.audit_autonomously(...) (expected 42501 and no row)")
                .isEmpty();
    }

    /**
     * Every function of schema fencing that inserts into fencing.rejected_write, directly or by calling (by name, also
     * in dynamic SQL) one that does, transitively; trigger and event-trigger functions are left out (they cannot be
     * called), and so are calls of an allowed entry (a function reaching the audit only through one is as safe as the
     * entry). Of those, the ones PUBLIC, fencing_app or fencing_break_glass may execute must be in {@link #ALLOWED}.
     */
    @Test
    void noFunctionThatWritesTheAuditIsExecutableByAnApplicationRoleOrPublicButTheWritersEntries() throws Exception {
        record Fn(String signature, String name, String source, boolean callable, String executableBy) {}
        List<Fn> functions = new ArrayList<>();
        try (Connection c = f.asSuperuser();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT p.oid::regprocedure::text, p.proname, coalesce(p.prosrc, ''),"
                        + " p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype),"
                        + " concat_ws(', ',"
                        + "   CASE WHEN has_function_privilege('public', p.oid, 'EXECUTE') THEN 'PUBLIC' END,"
                        + "   CASE WHEN has_function_privilege('fencing_app', p.oid, 'EXECUTE') THEN 'fencing_app' END,"
                        + "   CASE WHEN has_function_privilege('fencing_break_glass', p.oid, 'EXECUTE')"
                        + "        THEN 'fencing_break_glass' END)"
                        + " FROM pg_proc p WHERE p.pronamespace = 'fencing'::regnamespace")) {
            while (rs.next()) {
                functions.add(
                        new Fn(rs.getString(1), rs.getString(2), rs.getString(3), rs.getBoolean(4), rs.getString(5)));
            }
        }
        // writer name -> how it reaches the audit
        Map<String, String> writers = new TreeMap<>();
        for (Fn fn : functions) {
            if (fn.callable() && DIRECT_INSERT.matcher(fn.source()).find()) {
                writers.put(fn.signature(), "INSERT INTO fencing.rejected_write");
            }
        }
        boolean grew = true;
        for (int round = 0; grew && round < functions.size(); round++) {
            grew = false;
            Map<String, String> names = new TreeMap<>();
            for (Fn fn : functions) {
                // A function that reaches the audit only through an allowed entry is as safe as that entry.
                if (writers.containsKey(fn.signature()) && !ALLOWED.contains(fn.name())) {
                    names.put(fn.name(), fn.signature());
                }
            }
            for (Fn fn : functions) {
                if (!fn.callable() || writers.containsKey(fn.signature())) {
                    continue;
                }
                for (Map.Entry<String, String> w : names.entrySet()) {
                    if (!w.getKey().equals(fn.name())
                            && Pattern.compile("\\b" + Pattern.quote(w.getKey()) + "\\s*\\(")
                                    .matcher(fn.source())
                                    .find()) {
                        writers.put(fn.signature(), "calls " + w.getValue());
                        grew = true;
                        break;
                    }
                }
            }
        }
        assertThat(writers.keySet())
                .as("functions found to write the audit (the search itself works)")
                .anyMatch(sig -> sig.startsWith("fencing.record_rejection("));

        List<String> exposed = new ArrayList<>();
        for (Fn fn : functions) {
            if (writers.containsKey(fn.signature()) && !fn.executableBy().isEmpty() && !ALLOWED.contains(fn.name())) {
                exposed.add(fn.signature() + " executable by " + fn.executableBy() + " (" + writers.get(fn.signature())
                        + ")");
            }
        }
        assertThat(exposed)
                .as(
                        "functions reaching fencing.rejected_write that PUBLIC, fencing_app or"
                                + " fencing_break_glass may execute, beyond the allow-list %s; all audit-writing functions: %s",
                        ALLOWED, writers)
                .isEmpty();
    }
}
