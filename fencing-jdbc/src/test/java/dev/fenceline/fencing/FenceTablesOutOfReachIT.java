package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.backendPid;
import static dev.fenceline.fencing.AdversaryRole.execute;
import static dev.fenceline.fencing.AdversaryRole.mark;
import static dev.fenceline.fencing.AdversaryRole.query;
import static dev.fenceline.fencing.AdversaryRole.sqlState;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * PostgreSQL takes a lock on a table it is told to name before it checks most privileges: parse analysis of
 * {@code PREPARE s AS SELECT 1 FROM t} holds ACCESS SHARE on t to the end of the transaction whatever the login may
 * read, and {@code CREATE RULE ... TO t} queues for ACCESS EXCLUSIVE before it checks ownership. A queued ACCESS
 * EXCLUSIVE request makes every later lock request on t wait behind it: one open reader of the mark plus one such
 * CREATE RULE stop every advance and every read of the mark, for as long as the attacker likes. The one check made
 * before the lock is USAGE on the table's schema. So:
 * <ul>
 *   <li>a login in no fencing role cannot name any relation of schemas {@code fencing} and {@code fencing_private}
 *       at all (42501, permission denied for the schema) and so can lock none of them;</li>
 *   <li>a {@code fencing_app} login needs schema {@code fencing} (the writer reads the mark): it can queue such a
 *       lock, and the limit is that the next term's advance through the writer fails within its timeouts
 *       (advance_timeout: FL005, or the writer's lock_timeout: 55P03) instead of hanging.</li>
 * </ul>
 * Every statement that could wait has {@link AdversaryRole#QUERY_TIMEOUT_SECONDS} as a safety net; waits for another
 * session's state poll pg_locks, bounded in time.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FenceTablesOutOfReachIT {
    private static final Duration STATE_WAIT = Duration.ofSeconds(20);

    private TestDatabase db;
    private OutsiderScene scene;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        scene = OutsiderScene.create(db, "fence_tables_outsider_");
    }

    @AfterAll
    void tearDown() throws InterruptedException {
        if (scene != null) {
            scene.close();
        }
    }

    /** Every table, view, sequence and foreign table of the fence's schemas: what the fence or its audit reads. */
    private List<String> fenceRelations() throws SQLException {
        List<String> names = new ArrayList<>();
        try (Connection c = Fixtures.connect(db);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT c.oid::regclass::text FROM pg_class c"
                        + " JOIN pg_namespace n ON n.oid = c.relnamespace"
                        + " WHERE n.nspname IN ('fencing', 'fencing_private') AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')"
                        + " ORDER BY 1")) {
            while (rs.next()) {
                names.add(rs.getString(1));
            }
        }
        return names;
    }

    private static String locksOf(Connection superuser, long pid) throws SQLException {
        return query(
                superuser,
                "SELECT coalesce(string_agg(coalesce(relation::regclass::text, locktype) || ' ' || mode"
                        + " || CASE WHEN granted THEN '' ELSE ' (waiting)' END, ', '), 'none') FROM pg_locks"
                        + " WHERE pid = " + pid + " AND locktype = 'relation'");
    }

    @Test
    void aLoginOutsideTheFencingRolesCannotNameAnyRelationOfTheFenceOrTheAuditSoItCannotLockOne() throws Exception {
        List<String> relations = fenceRelations();
        assertThat(relations)
                .as("relations of schemas fencing and fencing_private")
                .contains("fencing.high_water_mark", "fencing.rejected_write");
        List<String> reachable = new ArrayList<>();
        try (Connection outsider = scene.connectAsOutsider();
                Connection superuser = Fixtures.connect(db)) {
            long pid = backendPid(outsider);
            for (String relation : relations) {
                outsider.setAutoCommit(false);
                try {
                    execute(outsider, "PREPARE fence_probe AS SELECT 1 FROM " + relation);
                    reachable.add(relation + ": PREPARE succeeded, holding " + locksOf(superuser, pid));
                } catch (SQLException e) {
                    if (!"42501".equals(e.getSQLState()) || !e.getMessage().contains("permission denied for schema")) {
                        reachable.add(relation + ": " + e.getSQLState() + " " + e.getMessage()
                                + " (expected 42501, permission denied for the schema)");
                    }
                } finally {
                    outsider.rollback();
                    outsider.setAutoCommit(true);
                    execute(outsider, "DEALLOCATE ALL"); // a prepared statement outlives its transaction
                }
            }
        }
        assertThat(reachable)
                .as("relations a login in no fencing role can name (and so lock at parse time)")
                .isEmpty();
    }

    /**
     * An open transaction that read the table (a leader's transaction reads the mark) holds ACCESS SHARE on it; an
     * outsider's CREATE RULE then queues ACCESS EXCLUSIVE behind it, and every read and write of the table behind that.
     * It must fail at the name instead, queuing nothing: the superuser's read of the table and (for the mark) the next
     * term's advance go on while the outsider's transaction stays open.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"fencing.high_water_mark", "fencing.rejected_write"})
    void createRuleFromALoginOutsideTheFencingRolesFailsWithoutQueuingALockSoTheAdvanceAndReadsGoOn(String table)
            throws Exception {
        String protectedTable = scene.table("rule_outsider");
        String resource = OutsiderScene.resourceOf(protectedTable);
        SoftAssertions softly = new SoftAssertions();
        try (Connection holder = Fixtures.connect(db);
                Connection outsider = scene.connectAsOutsider();
                Connection superuser = Fixtures.connect(db)) {
            holder.setAutoCommit(false);
            query(holder, "SELECT count(*) FROM " + table); // ACCESS SHARE until the holder ends
            long outsiderPid = backendPid(outsider);
            outsider.setAutoCommit(false);
            CompletableFuture<Throwable> rule = CompletableFuture.supplyAsync(
                    () -> {
                        try {
                            execute(
                                    outsider,
                                    "CREATE RULE fence_rule AS ON INSERT TO " + table + " DO INSTEAD NOTHING");
                            return null;
                        } catch (SQLException e) {
                            return e;
                        }
                    },
                    scene.background);
            boolean queued = awaitDoneOrWaiting(rule, superuser, outsiderPid, table);
            String outsiderLocks = locksOf(superuser, outsiderPid);
            softly.assertThat(queued)
                    .as(
                            "the outsider's CREATE RULE on %s is queued for a lock while its transaction"
                                    + " is open (its locks: %s)",
                            table, outsiderLocks)
                    .isFalse();

            // From other sessions, while the outsider's transaction is open (and, today, its request queued):
            Throwable read = timedStatement(superuser, "SELECT count(*) FROM " + table);
            softly.assertThat(read)
                    .as(
                            "a superuser's read of %s while the outsider's CREATE RULE is open (SQLSTATE" + " %s)",
                            table, sqlState(read))
                    .isNull();
            if (table.equals("fencing.high_water_mark")) {
                try (Connection next = scene.adversary.connect("leader-b")) {
                    Throwable advance = timedStatement(next, "SELECT fencing.enter('" + resource + "', 6, 'b')");
                    softly.assertThat(advance)
                            .as(
                                    "the next term's advance while the outsider's CREATE RULE is open"
                                            + " (SQLSTATE %s)",
                                    sqlState(advance))
                            .isNull();
                }
            }
            holder.rollback();
            Throwable outcome = rule.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            softly.assertThat(sqlState(outcome))
                    .as("the outsider's CREATE RULE ended with %s", outcome)
                    .isEqualTo("42501");
            softly.assertThat(outcome)
                    .as("refused at the schema, before any lock")
                    .hasMessageContaining("permission denied for schema");
            outsider.rollback();
        }
        if (table.equals("fencing.high_water_mark")) {
            softly.assertThat(mark(db, resource))
                    .as("the mark after the advance")
                    .isEqualTo(6);
        }
        softly.assertAll();
    }

    /**
     * The limit for a member of fencing_app, which must use schema fencing: holding ACCESS SHARE on the mark (a
     * prepared statement's parse) and queuing CREATE RULE on it from a second session delays the next term's advance
     * through the writer on its defaults at most by its timeouts: it fails with FL005 (advance_timeout, 1 s here) or
     * 55P03 (the writer's lock_timeout), or commits, and never hangs. The bound asserted is a generous timeout on the
     * call, not a measurement.
     */
    @Test
    void aFencingAppLoginHoldingAParseTimeLockOnTheMarkAndQueuingCreateRuleDelaysTheWritersAdvanceAtMostByItsTimeouts()
            throws Exception {
        String table = scene.table("rule_app_writer");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection parse = scene.adversary.connect("parse-lock");
                Connection rule = scene.adversary.connect("rule");
                Connection superuser = Fixtures.connect(db);
                HikariDataSource pool = scene.directPool("leader-b")) {
            CompletableFuture<Throwable> queued = holdAndQueue(parse, rule, superuser);
            FencedWriter leader = FencedWriter.create(pool, FencedWriterConfig.defaults());
            CompletableFuture<Void> advance = CompletableFuture.runAsync(
                    () -> leader.run(
                            FencingToken.of(resource, 6, "b"),
                            ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'b at 6' WHERE id = 1")),
                    scene.background);
            Throwable outcome = boundedOutcome(advance);
            release(parse, rule, queued);
            assertThat(outcome)
                    .as(
                            "the writer's advance while a fencing_app login queues CREATE RULE on the mark"
                                    + " ended within %s s",
                            AdversaryRole.QUERY_TIMEOUT_SECONDS)
                    .isNotInstanceOf(TimeoutException.class);
            if (outcome != null) {
                assertThat(sqlState(outcome)).as("%s", outcome).isIn("FL005", "55P03");
            }
        }
    }

    /**
     * The same limit for an advance asked for with SQL alone ({@code SELECT fencing.enter(...)} on a session whose
     * lock_timeout is the server's default, none): advance_timeout bounds it, FL005, or it succeeds; never a hang.
     */
    @Test
    void aFencingAppLoginHoldingAParseTimeLockOnTheMarkAndQueuingCreateRuleDelaysARawAdvanceAtMostByAdvanceTimeout()
            throws Exception {
        String table = scene.table("rule_app_raw");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection parse = scene.adversary.connect("parse-lock");
                Connection rule = scene.adversary.connect("rule");
                Connection superuser = Fixtures.connect(db);
                Connection next = scene.adversary.connect("leader-b")) {
            long nextPid = backendPid(next);
            CompletableFuture<Throwable> queued = holdAndQueue(parse, rule, superuser);
            CompletableFuture<String> advance = CompletableFuture.supplyAsync(
                    () -> {
                        try {
                            return query(next, "SELECT fencing.enter('" + resource + "', 6, 'b')");
                        } catch (SQLException e) {
                            throw new java.util.concurrent.CompletionException(e);
                        }
                    },
                    scene.background);
            Throwable outcome = boundedOutcome(advance);
            if (outcome instanceof TimeoutException) {
                query(superuser, "SELECT pg_cancel_backend(" + nextPid + ")");
            }
            release(parse, rule, queued);
            assertThat(outcome)
                    .as(
                            "the raw advance while a fencing_app login queues CREATE RULE on the mark ended"
                                    + " within %s s",
                            AdversaryRole.QUERY_TIMEOUT_SECONDS)
                    .isNotInstanceOf(TimeoutException.class);
            if (outcome != null) {
                assertThat(sqlState(outcome)).as("%s", outcome).isIn("FL005", "55P03");
            }
        }
    }

    /**
     * {@code parse} prepares a SELECT of the mark in an open transaction (ACCESS SHARE held); {@code rule} then sends
     * CREATE RULE on the mark in its own transaction, which queues for ACCESS EXCLUSIVE behind it. Returns the CREATE
     * RULE's outcome; returns once it is seen waiting in pg_locks (or has ended).
     */
    private CompletableFuture<Throwable> holdAndQueue(Connection parse, Connection rule, Connection superuser)
            throws Exception {
        parse.setAutoCommit(false);
        execute(parse, "PREPARE fence_probe AS SELECT 1 FROM fencing.high_water_mark");
        long rulePid = backendPid(rule);
        rule.setAutoCommit(false);
        CompletableFuture<Throwable> queued = CompletableFuture.supplyAsync(
                () -> {
                    try {
                        execute(
                                rule,
                                "CREATE RULE fence_rule AS ON INSERT TO fencing.high_water_mark DO INSTEAD NOTHING");
                        return null;
                    } catch (SQLException e) {
                        return e;
                    }
                },
                scene.background);
        awaitDoneOrWaiting(queued, superuser, rulePid, "fencing.high_water_mark");
        return queued;
    }

    private static void release(Connection parse, Connection rule, CompletableFuture<Throwable> queued)
            throws Exception {
        parse.rollback(); // the queued CREATE RULE gets its lock, then fails
        queued.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        rule.rollback();
    }

    /** The call's failure, null when it succeeded, a {@link TimeoutException} when it was still running at the bound. */
    private static Throwable boundedOutcome(CompletableFuture<?> call) throws InterruptedException {
        try {
            call.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            return e.getCause() instanceof java.util.concurrent.CompletionException ce ? ce.getCause() : e.getCause();
        } catch (TimeoutException e) {
            return e;
        }
    }

    /**
     * Waits (bounded) until {@code statement} has ended or backend {@code pid} waits for a lock on {@code table};
     * returns true when it is waiting.
     */
    private static boolean awaitDoneOrWaiting(
            CompletableFuture<?> statement, Connection superuser, long pid, String table) throws SQLException {
        long deadline = System.nanoTime() + STATE_WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            if (statement.isDone()) {
                return false;
            }
            if ("t"
                    .equals(query(
                            superuser,
                            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = " + pid
                                    + " AND NOT granted AND relation = '" + table + "'::regclass)"))) {
                return true;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("within " + STATE_WAIT + " the statement of backend " + pid
                + " neither ended nor waited for a lock on " + table);
    }

    /** Runs {@code sql} with a 5 s lock_timeout (reset afterwards); returns its failure, null when it succeeded. */
    private static Throwable timedStatement(Connection c, String sql) throws SQLException {
        try {
            execute(c, "SET lock_timeout = '5s'");
            execute(c, sql);
            return null;
        } catch (SQLException e) {
            return e;
        } finally {
            execute(c, "RESET lock_timeout");
        }
    }
}
