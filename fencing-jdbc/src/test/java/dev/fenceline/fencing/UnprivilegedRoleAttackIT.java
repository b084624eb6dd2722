package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.FENCE_LOCK_NAMESPACE;
import static dev.fenceline.fencing.AdversaryRole.execute;
import static dev.fenceline.fencing.AdversaryRole.mark;
import static dev.fenceline.fencing.AdversaryRole.query;
import static dev.fenceline.fencing.AdversaryRole.sqlState;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.testkit.PgBouncer;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Attacks by logins that are neither superuser, nor table owner, nor owner of schema {@code fencing}: an ordinary
 * {@code fencing_app} login ({@link AdversaryRole}), a login outside every fencing role, and another client of the
 * same transaction pooler. Each test asserts the safe behaviour: the current leader's writes commit, the next term
 * can advance, and a write without a valid term commits nothing.
 *
 * <p>Each test has its own resource and table (mark 5, held by leader a). Nothing sleeps: a wait the fence should
 * have bounded meets {@link AdversaryRole#QUERY_TIMEOUT_SECONDS} as a safety net, never as the assertion.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class UnprivilegedRoleAttackIT {
    private TestDatabase db;
    private AdversaryRole adversary;
    private OutsiderScene scene;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        scene = OutsiderScene.create(db, "fence_outsider_");
        adversary = scene.adversary;
    }

    @AfterAll
    void tearDown() throws InterruptedException {
        if (scene != null) {
            scene.close();
        }
    }

    private String note(String table, long id) {
        return Fixtures.text(db, "SELECT note FROM " + table + " WHERE id = " + id);
    }

    private long audits(String resource) {
        return count(db, "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + resource + "'");
    }

    /**
     * A temporary table {@code bait} on {@code c}'s session whose trigger calls the guard's slow path claiming a
     * termless DELETE of {@code table}: every INSERT into {@code bait} makes that claim.
     */
    private static void claimDeletesFromBait(Connection c, String table) throws SQLException {
        execute(
                c,
                "CREATE TEMPORARY TABLE bait (i int)",
                "CREATE FUNCTION pg_temp.claim() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
                        + " PERFORM fencing.guard_slow('" + OutsiderScene.resourceOf(table) + "', 'public', '" + table
                        + "',"
                        + " 'DELETE', NULL);"
                        + " RETURN NULL; END $f$",
                "CREATE TRIGGER claim AFTER INSERT ON bait FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.claim()");
    }

    private static FencedWriter writer(HikariDataSource pool, Duration lockTimeout) {
        return FencedWriter.create(
                pool, FencedWriterConfig.builder().lockTimeout(lockTimeout).build());
    }

    /** Another client of the pooler, logged in as the same role as the leader (one server session for both). */
    private Connection pooledClient(PgBouncer bouncer) throws SQLException {
        return DriverManager.getConnection(bouncer.jdbcUrl(db.name()), adversary.name(), "");
    }

    // ---- (c) the fence's advisory lock, taken exclusively by any login ------------------------------------------

    /**
     * Advisory-lock functions are executable by PUBLIC, and the fence's key is (1178946115, lock_key) with lock_key
     * drawn from a sequence starting at 1. A login outside every fencing role may hold the key exclusively on an idle
     * session (no timeout applies) for as long as it likes. The next term's advance ends every backend holding the
     * key, this one too, and advances within advance_timeout.
     */
    @Test
    void aLoginOutsideTheFencingRolesHoldingTheFenceLockExclusivelyCannotStopTheNextTermsAdvance() throws Exception {
        String table = scene.table("xlock_advance");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection squatter = scene.connectAsOutsider();
                Connection next = adversary.connect("leader-b")) {
            assertThat(query(
                            squatter,
                            "SELECT pg_try_advisory_lock(" + FENCE_LOCK_NAMESPACE + ", " + scene.lockKey(resource)
                                    + ")"))
                    .as("an outsider takes the fence lock exclusively")
                    .isEqualTo("t");
            // lock_timeout as the writer's pools send it
            Throwable advance = catchThrowable(
                    () -> execute(next, "SET lock_timeout = '2s'", "SELECT fencing.enter('" + resource + "', 6, 'b')"));
            assertThat(advance)
                    .as(
                            "the next term's advance while an outsider holds the fence lock exclusively"
                                    + " (SQLSTATE %s)",
                            sqlState(advance))
                    .isNull();
            assertThat(mark(db, resource)).isEqualTo(6);
            Throwable squatting = catchThrowable(() -> query(squatter, "SELECT 1"));
            assertThat(AdversaryRole.connectionLost(squatting))
                    .as("the squatter's session after the advance: %s", squatting)
                    .isTrue();
        }
        assertThat(count(
                        db,
                        "SELECT terminated_sessions FROM fencing.term_history WHERE resource = '" + resource
                                + "' AND term = 6"))
                .as("backends the advance ended")
                .isOne();
    }

    /**
     * The same with a prepared transaction (the XA support needs max_prepared_transactions above 0): a login outside
     * every fencing role takes the fence lock at transaction level and prepares. It has no backend to terminate, and
     * the advance cannot take the key exclusively while it holds it, so the advance fails (FL005) naming the prepared
     * transaction for the DBA, changing nothing; once it is rolled back, the next advance succeeds.
     */
    @Test
    void aFenceLockPreparedByALoginOutsideTheFencingRolesIsNamedByTheFailedAdvanceAndAdvancingResumesOnceRolledBack()
            throws Exception {
        String table = scene.table("xlock_prepared");
        String resource = OutsiderScene.resourceOf(table);
        try {
            try (Connection squatter = scene.connectAsOutsider()) {
                execute(
                        squatter,
                        "BEGIN",
                        "SELECT pg_advisory_xact_lock_shared(" + FENCE_LOCK_NAMESPACE + ", " + scene.lockKey(resource)
                                + ")",
                        "PREPARE TRANSACTION 'fence-squatter'");
            }
            try (Connection next = adversary.connect("leader-b")) {
                Throwable advance =
                        catchThrowable(() -> execute(next, "SELECT fencing.enter('" + resource + "', 6, 'b')"));
                assertThat(sqlState(advance)).isEqualTo("FL005");
                assertThat(advance).hasMessageContaining("fence-squatter");
            }
            assertThat(mark(db, resource)).as("nothing changed").isEqualTo(5);
            AdversaryRole.rollbackPreparedTransactions(db);
            try (Connection next = adversary.connect("leader-b")) {
                execute(next, "SELECT fencing.enter('" + resource + "', 6, 'b')");
            }
            assertThat(mark(db, resource)).isEqualTo(6);
        } finally {
            AdversaryRole.rollbackPreparedTransactions(db);
        }
    }

    /**
     * The same squatter against the current leader, which does not advance: its first write to a protected table finds
     * the key taken, and the entering terminates whoever holds it exclusively without being an advance (an advance
     * holds fencing.term_history in ROW EXCLUSIVE mode, which a login outside the fencing roles cannot even name).
     */
    @Test
    void aLoginOutsideTheFencingRolesHoldingTheFenceLockExclusivelyCannotBlockTheCurrentLeadersTransactions()
            throws Exception {
        String table = scene.table("xlock_leader");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection squatter = scene.connectAsOutsider();
                HikariDataSource pool = scene.directPool("leader-a")) {
            assertThat(query(
                            squatter,
                            "SELECT pg_try_advisory_lock(" + FENCE_LOCK_NAMESPACE + ", " + scene.lockKey(resource)
                                    + ")"))
                    .isEqualTo("t");
            FencedWriter leader = writer(pool, Duration.ofMillis(500));
            Throwable write = catchThrowable(() -> leader.run(
                    FencingToken.of(resource, 5, "a"),
                    ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'leader a at 5' WHERE id = 1")));
            assertThat(write)
                    .as(
                            "the current leader's transaction while an outsider holds the fence lock"
                                    + " exclusively (SQLSTATE %s)",
                            sqlState(write))
                    .isNull();
        }
        assertThat(note(table, 1)).isEqualTo("leader a at 5");
    }

    /**
     * Behind PgBouncer the startup {@code options} (with the pool's lock_timeout) are dropped, so the server session
     * runs with the server's default lock_timeout (0, none), and the writer sets its own for each transaction in its
     * first statement. The wait for the fence lock, at the work's first write while anyone holds the key
     * exclusively, must be bounded by the writer's lock timeout, never hang.
     */
    @Test
    void theWritersLockTimeoutBoundsItsWaitForTheFenceLockBehindATransactionPooler() throws Exception {
        String table = scene.table("xlock_pooled");
        String resource = OutsiderScene.resourceOf(table);
        try (PgBouncer bouncer = PgBouncer.start(
                        db.server(),
                        PgBouncer.Options.defaults().poolMode("transaction").defaultPoolSize(1));
                HikariDataSource pool = scene.bouncerPool(bouncer, "leader-a")) {
            FencedWriter leader = writer(pool, Duration.ofMillis(500));
            CompletableFuture<Void> write;
            try (Connection squatter = scene.connectAsOutsider()) {
                assertThat(query(
                                squatter,
                                "SELECT pg_try_advisory_lock(" + FENCE_LOCK_NAMESPACE + ", " + scene.lockKey(resource)
                                        + ")"))
                        .isEqualTo("t");
                write = CompletableFuture.runAsync(
                        () -> leader.run(
                                FencingToken.of(resource, 5, "a"),
                                ctx -> ctx.dsl()
                                        .execute("UPDATE " + table + " SET note = 'leader a at 5' WHERE id = 1")),
                        scene.background);
                Throwable outcome = null;
                boolean finished = true;
                try {
                    write.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    outcome = e.getCause();
                } catch (TimeoutException e) {
                    finished = false;
                }
                assertThat(finished)
                        .as("the leader's transaction ended (committed, or failed at the writer's lock"
                                + " timeout of 500 ms) while the fence lock stayed held exclusively")
                        .isTrue();
                if (outcome != null) {
                    assertThat(sqlState(outcome)).as("%s", outcome).isEqualTo("55P03");
                }
            }
            // The squatter's session ended: a transaction left waiting goes on now.
            Throwable swallowed =
                    catchThrowable(() -> write.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS));
        }
    }

    // ---- (c) settings another client leaves on a pooled server session -----------------------------------------

    /**
     * Behind a transaction pooler, clients logged in as the same role share server sessions, and a session-level SET
     * stays on the server session for the next client. A {@code fencing.term} left there by another client would,
     * were the writer not to set its own for each transaction, be the term the guard finds for the leader's writes:
     * the leader's transaction rejected as stale (and audited as a stale write of the leader's login), on every
     * transaction that lands on that server session. It must be ignored.
     */
    @Test
    void aFencingTermLeftOnAPooledServerSessionByAnotherClientDoesNotRejectTheLeadersTransactions() throws Exception {
        String table = scene.table("left_term");
        String resource = OutsiderScene.resourceOf(table);
        try (PgBouncer bouncer = PgBouncer.start(
                        db.server(),
                        PgBouncer.Options.defaults().poolMode("transaction").defaultPoolSize(1));
                HikariDataSource pool = scene.bouncerPool(bouncer, "leader-a")) {
            try (Connection other = pooledClient(bouncer)) {
                execute(other, "SET fencing.term = '4'");
            }
            try (Connection check = pooledClient(bouncer)) {
                assertThat(query(check, "SELECT current_setting('fencing.term', true)"))
                        .as("the other client's setting, still on the one server session")
                        .isEqualTo("4");
            }
            FencedWriter leader = writer(pool, Duration.ofSeconds(2));
            Throwable write = catchThrowable(() -> leader.run(
                    FencingToken.of(resource, 5, "a"),
                    ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'leader a at 5' WHERE id = 1")));
            assertThat(write)
                    .as("the current leader's transaction on a server session where another client left"
                            + " fencing.term = 4")
                    .isNull();
        }
        assertThat(note(table, 1)).isEqualTo("leader a at 5");
        assertThat(audits(resource))
                .as("rejections audited for the leader's login")
                .isZero();
    }

    /**
     * Worse: with {@code fencing.resource} and {@code fencing.leader_id} left on the server session too, the leader's
     * own write would advance the mark to the other client's term, under the other client's leader id, terminating
     * the leader's other sessions; from then on every transaction of the legitimate leader would be stale.
     */
    @Test
    void aTermResourceAndLeaderIdLeftOnAPooledServerSessionDoNotAdvanceTheMarkInTheLeadersTransaction()
            throws Exception {
        String table = scene.table("left_advance");
        String resource = OutsiderScene.resourceOf(table);
        try (PgBouncer bouncer = PgBouncer.start(
                        db.server(),
                        PgBouncer.Options.defaults().poolMode("transaction").defaultPoolSize(1));
                HikariDataSource pool = scene.bouncerPool(bouncer, "leader-a")) {
            try (Connection other = pooledClient(bouncer)) {
                execute(
                        other,
                        "SET fencing.term = '900'",
                        "SET fencing.resource = '" + resource + "'",
                        "SET fencing.leader_id = 'mallory'");
            }
            FencedWriter leader = writer(pool, Duration.ofSeconds(2));
            Throwable first = catchThrowable(() -> leader.run(
                    FencingToken.of(resource, 5, "a"),
                    ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'leader a at 5' WHERE id = 1")));
            assertThat(Fixtures.text(
                            db,
                            "SELECT highest_accepted || ' ' || coalesce(leader_id, '-')"
                                    + " FROM fencing.high_water_mark WHERE resource = '" + resource + "'"))
                    .as("the mark after the leader's transaction at 5 (%s)", first)
                    .isEqualTo("5 a");
            assertThat(first).isNull();
            Throwable second = catchThrowable(() -> leader.run(
                    FencingToken.of(resource, 5, "a"),
                    ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'leader a at 5 again' WHERE id = 2")));
            assertThat(second).as("the leader's next transaction at 5").isNull();
        }
        assertThat(note(table, 2)).isEqualTo("leader a at 5 again");
    }

    /**
     * An advance runs only under READ COMMITTED (FL011), and the new leader's first transaction advances the mark at
     * its first write. A {@code default_transaction_isolation} left on the pooled server session by another client
     * would begin that transaction at another isolation level and make it fail there instead of advancing; the
     * writer's first statement sets READ COMMITTED for its transaction.
     */
    @Test
    void anIsolationLevelLeftOnAPooledServerSessionDoesNotStopTheNewLeadersAdvance() throws Exception {
        String table = scene.table("left_isolation");
        String resource = OutsiderScene.resourceOf(table);
        try (PgBouncer bouncer = PgBouncer.start(
                        db.server(),
                        PgBouncer.Options.defaults().poolMode("transaction").defaultPoolSize(1));
                HikariDataSource pool = scene.bouncerPool(bouncer, "leader-b")) {
            try (Connection other = pooledClient(bouncer)) {
                execute(other, "SET default_transaction_isolation = 'repeatable read'");
            }
            FencedWriter next = writer(pool, Duration.ofSeconds(2));
            Throwable write = catchThrowable(() -> next.run(
                    FencingToken.of(resource, 6, "b"),
                    ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'leader b at 6' WHERE id = 1")));
            assertThat(write)
                    .as(
                            "the new leader's first transaction at 6 on a server session where another client"
                                    + " left default_transaction_isolation = 'repeatable read' (SQLSTATE %s)",
                            sqlState(write))
                    .isNull();
        }
        assertThat(mark(db, resource)).isEqualTo(6);
        assertThat(note(table, 1)).isEqualTo("leader b at 6");
    }

    // ---- (b) a rejected write that leaves no audit row -----------------------------------------------------------

    /**
     * A raw write carries its leader id in {@code fencing.leader_id}. Were its length (at most 200) checked before the
     * term, a stale write with a 201-character leader id would be refused with FL003 and audited nowhere (no row, no
     * count, no WARNING), and a deposed writer could probe or retry stale writes without a trace.
     */
    @Test
    void aStaleRawWriteCarryingAnOverlongLeaderIdIsAuditedOnce() throws Exception {
        String table = scene.table("long_leader");
        String resource = OutsiderScene.resourceOf(table);
        long countedBefore =
                count(db, "SELECT trigger_counted FROM fencing.rejection_counts WHERE reason = 'stale_term'");
        try (Connection a = adversary.connect("stale-writer")) {
            Throwable stale = catchThrowable(() -> AdversaryRole.inTransaction(
                    a,
                    "SET LOCAL fencing.term = '4'",
                    "SET LOCAL fencing.leader_id = '" + "x".repeat(201) + "'",
                    "UPDATE " + table + " SET note = 'stale, term 4' WHERE id = 1"));
            assertThat(stale).as("the stale write").isNotNull();
            assertThat(audits(resource))
                    .as("audit rows of the stale write (it ended with SQLSTATE %s)", sqlState(stale))
                    .isOne();
        }
        assertThat(count(db, "SELECT trigger_counted FROM fencing.rejection_counts WHERE reason = 'stale_term'"))
                .isEqualTo(countedBefore + 1);
        assertThat(note(table, 1)).isEqualTo("initial");
    }

    /**
     * Where an overlong leader id would be accepted (an advance stores it with the mark) it is bad input: FL003 naming
     * the setting, the limit and its length, the mark unchanged, no fence lock left behind, and the refusal audited
     * once as {@code invalid_leader_id} (the write and the direct call each). Offered with the mark's own term it is
     * another leader's id than the holder's: a term conflict, rejected and audited once.
     */
    @Test
    void anOverlongLeaderIdIsRefusedAndAuditedWhereItWouldBeAcceptedAndAuditedAsAConflictWhereItsTermIsRejected()
            throws Exception {
        String table = scene.table("long_leader_new");
        String resource = OutsiderScene.resourceOf(table);
        String overlong = "x".repeat(201);
        try (Connection a = adversary.connect("overlong-leader")) {
            Throwable advance = catchThrowable(() -> AdversaryRole.inTransaction(
                    a,
                    "SET LOCAL fencing.term = '6'",
                    "SET LOCAL fencing.resource = '" + resource + "'",
                    "SET LOCAL fencing.leader_id = '" + overlong + "'",
                    "UPDATE " + table + " SET note = 'term 6' WHERE id = 1"));
            assertThat(sqlState(advance)).as("%s", advance).isEqualTo("FL003");
            assertThat(advance)
                    .hasMessageContaining("leader_id")
                    .hasMessageContaining("201 characters")
                    .hasMessageContaining("at most 200");
            Throwable session =
                    catchThrowable(() -> query(a, "SELECT fencing.enter('" + resource + "', 6, '" + overlong + "')"));
            assertThat(sqlState(session)).as("%s", session).isEqualTo("FL003");
            assertThat(query(a, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"))
                    .as("fence locks left on the session")
                    .isEqualTo("0");
            // The mark's term with no holder recorded: entering it would accept the id (FL003); the fence lock
            // taken for it ends with the transaction.
            String unheld = "long_leader_unheld_" + scene.nextNumber();
            Fixtures.sql(
                    db,
                    "CREATE TABLE " + unheld + " (id bigint PRIMARY KEY)",
                    "SELECT fencing.protect_table('" + unheld + "', '" + OutsiderScene.resourceOf(unheld) + "')",
                    "SELECT fencing.enter('" + OutsiderScene.resourceOf(unheld) + "', 5)");
            Throwable atMark = catchThrowable(() -> query(
                    a, "SELECT fencing.enter('" + OutsiderScene.resourceOf(unheld) + "', 5, '" + overlong + "')"));
            assertThat(sqlState(atMark)).as("%s", atMark).isEqualTo("FL003");
            assertThat(atMark).hasMessageContaining("201 characters");
            assertThat(query(a, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"))
                    .as("fence locks left on the session after entering the mark's term")
                    .isEqualTo("0");
            assertThat(query(a, "SELECT fencing.enter('" + resource + "', 4, '" + overlong + "')"))
                    .as("a stale entering returns the mark")
                    .isEqualTo("5");
            Throwable conflict = catchThrowable(() -> AdversaryRole.inTransaction(
                    a,
                    "SET LOCAL fencing.term = '5'",
                    "SET LOCAL fencing.leader_id = '" + overlong + "'",
                    "UPDATE " + table + " SET note = 'term 5, overlong leader' WHERE id = 1"));
            assertThat(sqlState(conflict)).as("%s", conflict).isEqualTo("FL001");
        }
        assertThat(mark(db, resource)).isEqualTo(5);
        assertThat(note(table, 1)).isEqualTo("initial");
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + resource
                                + "' AND reason = 'term_conflict' AND leader_id = repeat('x', 200)"))
                .isOne();
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + resource
                                + "' AND reason = 'invalid_leader_id' AND offered_term = 6 AND leader_id = repeat('x', 200)"
                                + " AND source = 'trigger'"))
                .as("the refused write at 6 and the refused fencing.enter at 6")
                .isEqualTo(2);
        assertThat(audits(resource)).isEqualTo(3);
    }

    /**
     * Were {@code fencing.guard_slow} executable by PUBLIC (a foreign-key cascade may reach a protected table as any
     * owner), refusing only calls outside a trigger ({@code pg_trigger_depth() = 0}), any login could create a
     * temporary table with a trigger of its own and call it from there, naming a protected table it may not even
     * read: the audit would commit a {@code source = 'trigger'} row saying its DELETE of that table was refused, a
     * statement PostgreSQL would have refused with 42501 before any trigger ran, and bump the counter. Only the guard,
     * running as the fencing owner, may call it. (Rows from {@code fencing_app} calling the audit function itself are
     * documented; this login is in no fencing role.)
     */
    @Test
    void aLoginOutsideTheFencingRolesCannotAddTriggerAuditRowsForATableItMayNotWrite() throws Exception {
        String table = scene.table("forged_row");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection outside = scene.connectAsOutsider()) {
            claimDeletesFromBait(outside, table);
            Throwable claim = catchThrowable(() -> execute(outside, "INSERT INTO bait VALUES (1)"));
            assertThat(audits(resource))
                    .as(
                            "audit rows after a login without any right on %s called the guard's"
                                    + " slow path from its own trigger (%s)",
                            table, claim)
                    .isZero();
        }
    }

    /**
     * The table's write lock is no proof of a write: PostgreSQL takes it when it parses a statement and checks the
     * right only when it runs one, so {@code PREPARE} (or a function body being validated) leaves a login without any
     * right holding ROW EXCLUSIVE on the table until its transaction ends. From a trigger of its own it then still
     * must not get an audit row, or a count, for that table.
     */
    @Test
    void aLoginOutsideTheFencingRolesHoldingTheTablesWriteLockFromAPreparedStatementCannotAddTriggerAuditRows()
            throws Exception {
        String table = scene.table("forged_lock");
        String resource = OutsiderScene.resourceOf(table);
        long countedBefore = count(db, "SELECT sum(trigger_counted) FROM fencing.rejection_counts");
        try (Connection outside = scene.connectAsOutsider()) {
            claimDeletesFromBait(outside, table);
            Throwable claim = catchThrowable(() -> AdversaryRole.inTransaction(
                    outside, "PREPARE parsed_only AS DELETE FROM " + table, "INSERT INTO bait VALUES (1)"));
            assertThat(claim).as("the forged call").isNotNull();
            assertThat(audits(resource)).as("audit rows after %s", claim).isZero();
        }
        assertThat(count(db, "SELECT sum(trigger_counted) FROM fencing.rejection_counts"))
                .isEqualTo(countedBefore);
    }

    /**
     * The guard itself ({@code fencing.guard()}, PL/pgSQL or native) is the other way into the slow path: attached to
     * a temporary table of the caller's, its arguments could name any resource. Only its owner may attach it (a
     * trigger that fires needs no EXECUTE right, one being created does), so neither a login outside the fencing roles
     * nor a {@code fencing_app} login can, and nothing is audited or counted.
     */
    @Test
    void noLoginButTheGuardsOwnerCanAttachTheGuardToATableOfItsOwn() throws Exception {
        String table = scene.table("forged_guard");
        String resource = OutsiderScene.resourceOf(table);
        long countedBefore = count(db, "SELECT sum(trigger_counted) FROM fencing.rejection_counts");
        // the guard's arguments as protect_table passes them: the resource's lock_key and the resource
        String attach = "CREATE TRIGGER claim BEFORE INSERT ON bait FOR EACH STATEMENT EXECUTE FUNCTION fencing.guard("
                + "'" + scene.lockKey(resource) + "', '" + resource + "')";
        try (Connection outside = scene.connectAsOutsider();
                Connection app = adversary.connect("guard-attacher")) {
            for (Connection c : new Connection[] {outside, app}) {
                execute(c, "CREATE TEMPORARY TABLE bait (i int)");
                Throwable attached = catchThrowable(() -> execute(c, attach));
                assertThat(sqlState(attached)).as("%s", attached).isEqualTo("42501");
                Throwable insert = catchThrowable(() -> execute(c, "INSERT INTO bait VALUES (1)"));
                assertThat(insert).isNull();
            }
        }
        assertThat(audits(resource)).isZero();
        assertThat(count(db, "SELECT sum(trigger_counted) FROM fencing.rejection_counts"))
                .isEqualTo(countedBefore);
    }

    /**
     * A second service may write a protected table (its own grants) without being in any fencing role: its write
     * without a term is still rejected with FL002 and audited once, not refused for a missing right on the fencing
     * functions.
     */
    @Test
    void aLoginOutsideTheFencingRolesThatMayWriteAProtectedTableIsRejectedWithoutATermAndAuditedOnce()
            throws Exception {
        String table = scene.table("second_service");
        String resource = OutsiderScene.resourceOf(table);
        String service = "fence_service_" + ProcessHandle.current().pid();
        Fixtures.sql(
                db,
                "CREATE ROLE " + service + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE",
                "GRANT SELECT, UPDATE ON " + table + " TO " + service);
        try {
            try (Connection svc = DriverManager.getConnection(db.jdbcUrl(), service, "")) {
                Throwable write =
                        catchThrowable(() -> execute(svc, "UPDATE " + table + " SET note = 'no term' WHERE id = 1"));
                assertThat(sqlState(write)).as("%s", write).isEqualTo("FL002");
            }
            assertThat(audits(resource)).isOne();
            assertThat(note(table, 1)).isEqualTo("initial");
        } finally {
            Fixtures.sql(db, "DROP OWNED BY " + service, "DROP ROLE " + service);
        }
    }

    // ---- (a) checked safe: every write statement of PostgreSQL 15 meets the statement trigger ---------------------

    /**
     * MERGE fires the statement triggers of every action it names (even when no row matches), INSERT ... ON CONFLICT
     * those of INSERT (and UPDATE), a writable CTE those of its statement, COPY FROM those of INSERT, TRUNCATE its
     * own: each, carrying the deposed term 4, is rejected and audited once, and changes nothing.
     */
    @Test
    void everyWriteStatementCarryingADeposedTermIsRejectedAndAuditedOnce() throws Exception {
        String table = scene.table("every_statement");
        String resource = OutsiderScene.resourceOf(table);
        String[] statements = {
            "MERGE INTO " + table + " t USING (VALUES (1)) v(id) ON t.id = v.id"
                    + " WHEN MATCHED THEN UPDATE SET note = 'merged'",
            "MERGE INTO " + table + " t USING (VALUES (99)) v(id) ON t.id = v.id"
                    + " WHEN NOT MATCHED THEN INSERT VALUES (99, 'm')",
            // no row matches no action: the statement trigger fires all the same
            "MERGE INTO " + table + " t USING (VALUES (1)) v(id) ON t.id = v.id"
                    + " WHEN NOT MATCHED THEN INSERT VALUES (98, 'm')",
            "INSERT INTO " + table + " VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET note = 'upserted'",
            "INSERT INTO " + table + " VALUES (1, 'x') ON CONFLICT DO NOTHING",
            "WITH w AS (UPDATE " + table + " SET note = 'cte' RETURNING 1) SELECT count(*) FROM w",
            "TRUNCATE " + table
        };
        String before = Fixtures.text(db, "SELECT string_agg(id || ':' || note, ',' ORDER BY id) FROM " + table);
        try (Connection a = adversary.connect("stale-writer")) {
            for (String sql : statements) {
                Throwable stale =
                        catchThrowable(() -> AdversaryRole.inTransaction(a, "SET LOCAL fencing.term = '4'", sql));
                assertThat(sqlState(stale)).as("%s: %s", sql, stale).isEqualTo("FL001");
            }
            a.setAutoCommit(false);
            Throwable copy;
            try {
                execute(a, "SET LOCAL fencing.term = '4'");
                copy = catchThrowable(() -> a.unwrap(org.postgresql.PGConnection.class)
                        .getCopyAPI()
                        .copyIn(
                                "COPY " + table + " (id, note) FROM STDIN WITH (FORMAT csv)",
                                new java.io.StringReader("50,copied\n")));
            } finally {
                a.rollback();
                a.setAutoCommit(true);
            }
            assertThat(sqlState(copy)).as("COPY FROM STDIN: %s", copy).isEqualTo("FL001");
        }
        assertThat(Fixtures.text(db, "SELECT string_agg(id || ':' || note, ',' ORDER BY id) FROM " + table))
                .isEqualTo(before);
        assertThat(audits(resource)).isEqualTo(statements.length + 1);
    }

    // ---- (a) a write without a valid term ------------------------------------------------------------------------

    /**
     * A resource nobody has advanced yet has mark 0. A term is a positive bigint: entering a transaction at term 0
     * equal to the mark, with {@code fencing.enter} or with a raw {@code fencing.term = '0'}, is refused (FL003), and
     * the transaction writes nothing.
     */
    @Test
    void enteringATransactionAtTermZeroIsRefusedAndWritesNothing() throws Exception {
        String table = "term_zero_" + scene.nextNumber();
        String resource = OutsiderScene.resourceOf(table);
        Fixtures.sql(
                db,
                "CREATE TABLE " + table + " (id bigint PRIMARY KEY, note text)",
                "INSERT INTO " + table + " (id, note) VALUES (1, 'initial')",
                "SELECT fencing.protect_table('" + table + "', '" + resource + "')");
        adversary.grantWrites(table);
        assertThat(mark(db, resource)).isZero();
        try (Connection a = adversary.connect("term-zero")) {
            Throwable zero = catchThrowable(() -> AdversaryRole.inTransaction(
                    a,
                    "SELECT fencing.enter('" + resource + "', 0, 'z')",
                    "UPDATE " + table + " SET note = 'written at term 0' WHERE id = 1"));
            assertThat(sqlState(zero))
                    .as("entering a transaction at term 0: %s", zero)
                    .isEqualTo("FL003");
            Throwable raw = catchThrowable(() -> AdversaryRole.inTransaction(
                    a,
                    "SET LOCAL fencing.term = '0'",
                    "SET LOCAL fencing.resource = '" + resource + "'",
                    "UPDATE " + table + " SET note = 'written at term 0' WHERE id = 1"));
            assertThat(sqlState(raw)).as("a raw write at term 0: %s", raw).isEqualTo("FL003");
        }
        assertThat(note(table, 1)).isEqualTo("initial");
    }
}
