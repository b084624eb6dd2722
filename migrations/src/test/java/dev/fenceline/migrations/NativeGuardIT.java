package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.testkit.NativeGuard;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Switching fencing.guard() between its native (C) and PL/pgSQL implementations. What the guard decides is proved
 * against both by fencing-jdbc's trigger contract ({@code TriggerModeContract}); here: installation, switching and
 * its failures.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NativeGuardIT {
    private static final String GUARD_ACL_AND_TRIGGERS = "SELECT coalesce(array_to_string(p.proacl, ','), '') || '|'"
            + " || (SELECT string_agg(t.tgrelid::regclass::text || ':' || t.tgname, ',' ORDER BY 1) FROM pg_trigger t"
            + "     WHERE t.tgfoid = p.oid)"
            + " FROM pg_proc p WHERE p.oid = 'fencing.guard()'::regprocedure";

    private TestDatabase db;

    @BeforeAll
    void migrate(TestDatabase db) throws SQLException {
        this.db = db;
        FencingMigrations.migrate(db.dataSource());
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE ledger_a (id int PRIMARY KEY)");
            s.execute("CREATE TABLE ledger_b (id int PRIMARY KEY)");
            s.execute("SELECT fencing.protect_table('ledger_a', 'native-guard')");
            s.execute("SELECT fencing.protect_table('ledger_b', 'native-guard')");
        }
    }

    private static String text(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    /**
     * A cursor's portal owns what it locks while it runs, and a portal that fails inside a savepoint releases its locks
     * at the savepoint's rollback, while the rows it wrote earlier, at top level, stay. The native guard takes the fence
     * lock for the transaction itself, so the next term's advance still finds (and ends) the transaction holding those
     * rows. (The PL/pgSQL guard can only lock through SQL, i.e. for the portal: docs/fencing.md names that limit.)
     * The same whichever way the transaction's settings are spelled: a term with a blank or a leading zero, a resource
     * with a trailing blank or a leader id of 200 characters but more bytes are entered by the SQL slow path, whose
     * lock the guard must take for the transaction too.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "canonical",
                "term with a blank",
                "term with a leading zero",
                "resource with a blank",
                "leader id of multi-byte characters"
            })
    void aWriteThroughACursorThatLaterFailsInASavepointKeepsTheNativeGuardsFenceLock(String spelling) throws Exception {
        NativeGuard.assumeLoads(db);
        cursorFailingInASavepointKeepsTheFenceLock("native", spelling);
    }

    /**
     * The PL/pgSQL guard (managed PostgreSQL, no native library) takes the fence lock in a block of its own, so it too
     * belongs to the transaction rather than to the cursor's portal.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"canonical", "term with a blank"})
    void aWriteThroughACursorThatLaterFailsInASavepointKeepsThePlpgsqlGuardsFenceLock(String spelling)
            throws Exception {
        cursorFailingInASavepointKeepsTheFenceLock("plpgsql", spelling);
    }

    private void cursorFailingInASavepointKeepsTheFenceLock(String guard, String spelling) throws Exception {
        try (Connection admin = db.dataSource().getConnection();
                Statement a = admin.createStatement()) {
            assertThat(text(a, "SELECT fencing.use_" + guard + "_guard()")).isEqualTo(guard);
            long term = Long.parseLong(text(
                    a,
                    "SELECT highest_accepted + 1 FROM fencing.high_water_mark" + " WHERE resource = 'native-guard'"));
            assertThat(text(a, "SELECT fencing.enter('native-guard', " + term + ")"))
                    .isEqualTo(Long.toString(term));
            try (Connection old = db.dataSource().getConnection();
                    Statement o = old.createStatement()) {
                o.execute("CREATE FUNCTION pg_temp.put(i int) RETURNS int LANGUAGE sql"
                        + " AS $$ INSERT INTO ledger_a VALUES (i) RETURNING i $$");
                old.setAutoCommit(false);
                String termText = switch (spelling) {
                    case "term with a blank" -> " " + term;
                    case "term with a leading zero" -> "0" + term;
                    default -> Long.toString(term);
                };
                o.execute("SET LOCAL fencing.term = '" + termText + "'");
                if (spelling.equals("resource with a blank")) {
                    o.execute("SET LOCAL fencing.resource = 'native-guard '");
                }
                if (spelling.equals("leader id of multi-byte characters")) {
                    o.execute("SELECT set_config('fencing.leader_id', repeat(chr(233), 120), true)");
                }
                o.execute(
                        "DECLARE c CURSOR FOR SELECT pg_temp.put(g + 9000), 1 / (g - 2) FROM generate_series(1, 3) g");
                o.execute("FETCH 1 FROM c"); // row 9001 written at the term, fence lock taken
                o.execute("SAVEPOINT s");
                assertThatThrownBy(() -> o.execute("FETCH 1 FROM c")).isInstanceOf(SQLException.class);
                o.execute("ROLLBACK TO s");
                assertThat(text(
                                o,
                                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                                        + " AND pid = pg_backend_pid() AND classid = 1178946115"))
                        .as("the fence lock after the rollback")
                        .isEqualTo("1");
                // The next term: its advance must end the transaction that holds row 9001.
                assertThat(text(a, "SELECT fencing.enter('native-guard', " + (term + 1) + ")"))
                        .isEqualTo(Long.toString(term + 1));
                assertThatThrownBy(old::commit).isInstanceOf(SQLException.class);
            }
            assertThat(text(a, "SELECT count(*) FROM ledger_a WHERE id = 9001")).isEqualTo("0");
        }
    }

    /**
     * The native guard caches the mark's table and indexes per backend and forgets them on any relation's
     * invalidation. Another session creating and dropping tables while the leader writes sends such invalidations in
     * the middle of an entering: every write at the current term must still go through.
     */
    @Test
    void writesAtTheCurrentTermGoThroughWhileAnotherSessionKeepsChangingTables() throws Exception {
        NativeGuard.assumeLoads(db);
        try (Connection admin = db.dataSource().getConnection();
                Statement a = admin.createStatement()) {
            assertThat(text(a, "SELECT fencing.use_native_guard()")).isEqualTo("native");
            String term =
                    text(a, "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = 'native-guard'");
            if ("0".equals(term)) {
                term = text(a, "SELECT fencing.enter('native-guard', 1)");
            }
            AtomicBoolean writing = new AtomicBoolean(true);
            Thread churn = new Thread(() -> {
                try (Connection other = db.dataSource().getConnection();
                        Statement o = other.createStatement()) {
                    long deadline = System.currentTimeMillis() + 60_000;
                    for (int i = 0; i < 100_000 && writing.get() && System.currentTimeMillis() < deadline; i++) {
                        o.execute("CREATE TEMP TABLE churn_" + (i % 4) + " (id int)");
                        o.execute("DROP TABLE churn_" + (i % 4));
                    }
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            churn.start();
            List<String> failures = new ArrayList<>();
            try (Connection leader = db.dataSource().getConnection();
                    Statement w = leader.createStatement()) {
                leader.setAutoCommit(false);
                for (int i = 0; i < 1500; i++) {
                    try {
                        w.execute("SET LOCAL fencing.term = '" + term + "'");
                        w.execute("INSERT INTO ledger_b VALUES (" + (20_000 + i) + ")");
                        leader.commit();
                    } catch (SQLException e) {
                        failures.add(e.getSQLState() + " " + e.getMessage());
                        leader.rollback();
                    }
                }
            } finally {
                writing.set(false);
                churn.join(60_000);
            }
            assertThat(failures).as("writes at the current term that failed").isEmpty();
        }
    }

    @Test
    void migrationInstallsTheNativeGuardWhenItsLibraryLoads() throws Exception {
        NativeGuard.assumeLoads(db);
        // A fresh database migrated by a superuser on a server with the library: native without being asked.
        try (TestDatabase fresh = db.server().createDatabase("native_guard_fresh");
                Connection c = fresh.dataSource().getConnection();
                Statement s = c.createStatement()) {
            FencingMigrations.migrate(fresh.dataSource());
            assertThat(text(s, "SELECT fencing.guard_implementation()")).isEqualTo("native");
        }
    }

    @Test
    void switchingBetweenImplementationsKeepsGrantsAndEveryProtectedTablesTrigger() throws Exception {
        NativeGuard.assumeLoads(db);
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            assertThat(text(s, "SELECT fencing.use_plpgsql_guard()")).isEqualTo("plpgsql");
            assertThat(text(s, "SELECT fencing.guard_implementation()")).isEqualTo("plpgsql");
            String before = text(s, GUARD_ACL_AND_TRIGGERS);
            assertThat(before).contains("ledger_a:fencing_guard", "ledger_b:fencing_guard");

            assertThat(text(s, "SELECT fencing.use_native_guard()")).isEqualTo("native");
            assertThat(text(s, "SELECT fencing.guard_implementation()")).isEqualTo("native");
            assertThat(text(s, GUARD_ACL_AND_TRIGGERS)).isEqualTo(before);

            // The switched guard is live in this very session: a write without a term is refused.
            assertThatThrownBy(() -> s.execute("INSERT INTO ledger_a VALUES (1)"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL002"));
            assertThat(text(s, "SELECT fencing.use_plpgsql_guard()")).isEqualTo("plpgsql");
            assertThat(text(s, GUARD_ACL_AND_TRIGGERS)).isEqualTo(before);
        }
    }

    @Test
    void nativeGuardFromAMissingLibraryIsRefusedWithFL008AndChangesNothing() throws Exception {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            String implementation = text(s, "SELECT fencing.guard_implementation()");
            assertThatThrownBy(() -> s.execute("SELECT fencing.use_native_guard('no_such_fenceline_library')"))
                    .isInstanceOfSatisfying(SQLException.class, e -> {
                        assertThat(e.getSQLState()).isEqualTo("FL008");
                        assertThat(e.getMessage())
                                .contains(
                                        "cannot load no_such_fenceline_library",
                                        "fencing.guard() is unchanged (" + implementation + ")",
                                        "build.sh --install");
                    });
            assertThat(text(s, "SELECT fencing.guard_implementation()")).isEqualTo(implementation);
        }
    }

    @Test
    void nativeGuardRequestedByANonSuperuserIsRefusedWithFL008() throws Exception {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            String implementation = text(s, "SELECT fencing.guard_implementation()");
            s.execute(
                    "DO $$ BEGIN CREATE ROLE native_guard_owner NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
            s.execute("GRANT USAGE ON SCHEMA fencing TO native_guard_owner");
            s.execute("GRANT EXECUTE ON FUNCTION fencing.use_native_guard(text), fencing.guard_implementation()"
                    + " TO native_guard_owner");
            s.execute("SET ROLE native_guard_owner");
            try {
                assertThatThrownBy(() -> s.execute("SELECT fencing.use_native_guard()"))
                        .isInstanceOfSatisfying(SQLException.class, e -> {
                            assertThat(e.getSQLState()).isEqualTo("FL008");
                            assertThat(e.getMessage()).contains("native_guard_owner is not a superuser");
                        });
            } finally {
                s.execute("RESET ROLE");
            }
            assertThat(text(s, "SELECT fencing.guard_implementation()")).isEqualTo(implementation);
        }
    }

    @Test
    void libraryNameShapedLikeInjectionIsRejectedWithFL003() throws Exception {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            assertThatThrownBy(() -> s.execute("SELECT fencing.use_native_guard('x''; DROP TABLE ledger_a; --')"))
                    .isInstanceOfSatisfying(SQLException.class, e -> {
                        assertThat(e.getSQLState()).isEqualTo("FL003");
                        assertThat(e.getMessage()).contains("is not a library name or path");
                    });
            assertThat(text(s, "SELECT to_regclass('ledger_a') IS NOT NULL")).isEqualTo("t");
        }
    }

    @Test
    void publicCannotSwitchTheGuard() throws Exception {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            assertThat(text(
                            s,
                            "SELECT has_function_privilege('public', 'fencing.use_native_guard(text)', 'EXECUTE')"
                                    + " OR has_function_privilege('public', 'fencing.use_plpgsql_guard()', 'EXECUTE')"))
                    .isEqualTo("f");
            assertThat(
                            text(
                                    s,
                                    "SELECT has_function_privilege('fencing_auditor', 'fencing.guard_implementation()', 'EXECUTE')"))
                    .isEqualTo("t");
        }
    }
}
