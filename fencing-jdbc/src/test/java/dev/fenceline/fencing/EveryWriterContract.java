package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.backendAlive;
import static dev.fenceline.fencing.AdversaryRole.backendPid;
import static dev.fenceline.fencing.AdversaryRole.execute;
import static dev.fenceline.fencing.AdversaryRole.inTransaction;
import static dev.fenceline.fencing.AdversaryRole.mark;
import static dev.fenceline.fencing.AdversaryRole.query;
import static dev.fenceline.fencing.AdversaryRole.sqlState;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The guard's side of "the fence holds against every writer": writes by an ordinary {@code fencing_app} role straight
 * into partitions and inheritance children, terms beyond max_term_jump, a term meant for one resource used on
 * another, and entering, which lasts for one transaction and must leave nothing on the session. Runs against both
 * implementations of {@code fencing.guard()} ({@link EveryWriterPlpgsqlIT}, {@link EveryWriterNativeIT}), which must
 * decide alike.
 *
 * <p>Every attempt runs on a fresh connection of the {@link AdversaryRole}, so no test leans on what an earlier
 * transaction left on a session. Assertions are on committed rows, marks, the audit and SQLSTATEs; nothing sleeps.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class EveryWriterContract {
    private TestDatabase db;
    private AdversaryRole adversary;

    /** Switches {@code fencing.guard()} of the freshly migrated database; returns the expected implementation name. */
    abstract String useGuard(TestDatabase db);

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        String implementation = useGuard(db);
        assertThat(Fixtures.text(db, "SELECT fencing.guard_implementation()")).isEqualTo(implementation);
        Fixtures.sql(db, "UPDATE fencing.settings SET value = '1s' WHERE name = 'advance_timeout'");
        adversary = AdversaryRole.create(db);

        // A partitioned table with leaf partitions and a sub-partitioned one, all existing when it is protected. Each
        // test writes rows (or a partition) of its own, so a write that wrongly commits cannot skew another test.
        Fixtures.sql(
                db,
                "CREATE TABLE part_ledger (region int NOT NULL, id bigint NOT NULL, note text, PRIMARY KEY (region, id))"
                        + " PARTITION BY LIST (region)",
                "CREATE TABLE part_ledger_r1 PARTITION OF part_ledger FOR VALUES IN (1)",
                "CREATE TABLE part_ledger_r2 PARTITION OF part_ledger FOR VALUES IN (2)",
                "CREATE TABLE part_ledger_r3 PARTITION OF part_ledger FOR VALUES IN (3) PARTITION BY RANGE (id)",
                "CREATE TABLE part_ledger_r3_low PARTITION OF part_ledger_r3 FOR VALUES FROM (MINVALUE) TO (1000000)",
                "CREATE TABLE part_ledger_r7 PARTITION OF part_ledger FOR VALUES IN (7)",
                "INSERT INTO part_ledger (region, id, note) SELECT r, g, 'initial' FROM unnest(ARRAY[1, 2, 3, 7]) r,"
                        + " generate_series(1, 3) g",
                "SELECT fencing.protect_table('part_ledger', 'part')",
                "SELECT fencing.enter('part', 5, 'leader-5')");
        adversary.grantWrites(
                "part_ledger",
                "part_ledger_r1",
                "part_ledger_r2",
                "part_ledger_r3",
                "part_ledger_r3_low",
                "part_ledger_r7");

        // A plain table with an inheritance child existing when it is protected.
        Fixtures.sql(
                db,
                "CREATE TABLE inh_ledger (id bigint PRIMARY KEY, note text)",
                "CREATE TABLE inh_ledger_child () INHERITS (inh_ledger)",
                "INSERT INTO inh_ledger_child (id, note) SELECT g, 'initial' FROM generate_series(1, 3) g",
                "SELECT fencing.protect_table('inh_ledger', 'inh')",
                "SELECT fencing.enter('inh', 5, 'leader-5')");
        adversary.grantWrites("inh_ledger", "inh_ledger_child");
    }

    @AfterEach
    void rollBackPreparedTransactions() {
        AdversaryRole.rollbackPreparedTransactions(db);
    }

    @AfterAll
    void dropAdversary() {
        if (adversary != null) {
            adversary.close();
        }
    }

    /** Runs the statements as one transaction of a fresh adversary connection and returns what it threw (or null). */
    private Throwable attempt(String... statements) throws Exception {
        try (Connection c = adversary.connect("adversary")) {
            return catchThrowable(() -> inTransaction(c, statements));
        }
    }

    private void assertRejected(String sqlState, String what, String... statements) throws Exception {
        Throwable t = attempt(statements);
        assertThat(sqlState(t)).as("%s (error: %s)", what, t).isEqualTo(sqlState);
    }

    private long rows(String sql) {
        return count(db, sql);
    }

    // ---- partitions and inheritance ------------------------------------------------------------------------------

    @Test
    void termlessInsertUpdateDeleteStraightIntoAnExistingPartitionAreRejectedWithFL002() throws Exception {
        assertRejected(
                "FL002",
                "term-less INSERT into partition part_ledger_r1",
                "INSERT INTO part_ledger_r1 (region, id, note) VALUES (1, 100, 'no term')");
        assertRejected(
                "FL002",
                "term-less UPDATE of partition part_ledger_r1",
                "UPDATE part_ledger_r1 SET note = 'no term' WHERE id = 1");
        assertRejected(
                "FL002", "term-less DELETE from partition part_ledger_r1", "DELETE FROM part_ledger_r1 WHERE id = 2");
        assertThat(rows("SELECT count(*) FROM part_ledger_r1")).isEqualTo(3);
        assertThat(rows("SELECT count(*) FROM part_ledger_r1 WHERE note <> 'initial'"))
                .isZero();
    }

    @Test
    void staleTermStraightIntoAPartitionIsRejectedWithFL001() throws Exception {
        assertRejected(
                "FL001",
                "UPDATE of partition part_ledger_r2 at stale term 4 (mark 5)",
                "SET LOCAL fencing.term = '4'",
                "UPDATE part_ledger_r2 SET note = 'stale' WHERE id = 1");
        assertThat(rows("SELECT count(*) FROM part_ledger_r2 WHERE note = 'stale'"))
                .isZero();
        assertThat(mark(db, "part")).isEqualTo(5);
    }

    @Test
    void truncateOfAPartitionWithoutATermIsRejected() throws Exception {
        assertRejected("FL002", "term-less TRUNCATE of partition part_ledger_r7", "TRUNCATE part_ledger_r7");
        assertThat(rows("SELECT count(*) FROM part_ledger_r7")).isEqualTo(3);
    }

    @Test
    void subPartitionExistingAtProtectTimeIsProtected() throws Exception {
        assertRejected(
                "FL002",
                "term-less INSERT into sub-partition part_ledger_r3_low",
                "INSERT INTO part_ledger_r3_low (region, id, note) VALUES (3, 100, 'no term')");
        assertRejected(
                "FL002",
                "term-less UPDATE of sub-partition part_ledger_r3_low",
                "UPDATE part_ledger_r3_low SET note = 'no term' WHERE id = 1");
        assertThat(rows("SELECT count(*) FROM part_ledger_r3_low WHERE note <> 'initial' OR id = 100"))
                .isZero();
    }

    @Test
    void partitionCreatedLaterIsProtected() throws Exception {
        Fixtures.sql(db, "CREATE TABLE part_ledger_r4 PARTITION OF part_ledger FOR VALUES IN (4)");
        adversary.grantWrites("part_ledger_r4");
        assertRejected(
                "FL002",
                "term-less INSERT into partition part_ledger_r4 created after protect_table",
                "INSERT INTO part_ledger_r4 (region, id, note) VALUES (4, 1, 'no term')");
        assertThat(rows("SELECT count(*) FROM part_ledger_r4")).isZero();
        assertThat(rows("SELECT count(*) FROM fencing.protected_table WHERE tbl = 'part_ledger_r4'::regclass"
                        + " AND resource = 'part' AND parent = 'part_ledger'::regclass"))
                .isEqualTo(1);
    }

    @Test
    void tableAttachedLaterAsAPartitionIsProtected() throws Exception {
        Fixtures.sql(
                db,
                "CREATE TABLE part_ledger_r5 (LIKE part_ledger)",
                "ALTER TABLE part_ledger ATTACH PARTITION part_ledger_r5 FOR VALUES IN (5)");
        adversary.grantWrites("part_ledger_r5");
        assertRejected(
                "FL002",
                "term-less INSERT into part_ledger_r5 attached after protect_table",
                "INSERT INTO part_ledger_r5 (region, id, note) VALUES (5, 1, 'no term')");
        assertThat(rows("SELECT count(*) FROM part_ledger_r5")).isZero();
    }

    @Test
    void subPartitionCreatedLaterIsProtected() throws Exception {
        Fixtures.sql(
                db,
                "CREATE TABLE part_ledger_r3_high PARTITION OF part_ledger_r3 FOR VALUES FROM (1000000) TO (MAXVALUE)");
        adversary.grantWrites("part_ledger_r3_high");
        assertRejected(
                "FL002",
                "term-less INSERT into sub-partition part_ledger_r3_high created after protect_table",
                "INSERT INTO part_ledger_r3_high (region, id, note) VALUES (3, 2000000, 'no term')");
        assertThat(rows("SELECT count(*) FROM part_ledger_r3_high")).isZero();
    }

    @Test
    void inheritanceChildExistingAtProtectTimeIsProtected() throws Exception {
        assertRejected(
                "FL002",
                "term-less UPDATE of inheritance child inh_ledger_child",
                "UPDATE inh_ledger_child SET note = 'no term' WHERE id = 1");
        assertRejected(
                "FL002",
                "term-less INSERT into inheritance child inh_ledger_child",
                "INSERT INTO inh_ledger_child (id, note) VALUES (100, 'no term')");
        assertThat(rows("SELECT count(*) FROM inh_ledger_child WHERE note = 'no term' OR id = 100"))
                .isZero();
    }

    @Test
    void inheritanceChildCreatedLaterIsProtected() throws Exception {
        Fixtures.sql(db, "CREATE TABLE inh_ledger_late () INHERITS (inh_ledger)");
        adversary.grantWrites("inh_ledger_late");
        assertRejected(
                "FL002",
                "term-less INSERT into inheritance child inh_ledger_late created after protect_table",
                "INSERT INTO inh_ledger_late (id, note) VALUES (1, 'no term')");
        assertThat(rows("SELECT count(*) FROM inh_ledger_late")).isZero();
    }

    @Test
    void protectedTableListsEveryDescendantWithTheTableItInheritsProtectionFrom() {
        for (String partition : new String[] {"part_ledger_r1", "part_ledger_r2", "part_ledger_r3", "part_ledger_r7"}) {
            assertThat(rows("SELECT count(*) FROM fencing.protected_table WHERE tbl = '" + partition + "'::regclass"
                            + " AND resource = 'part' AND parent = 'part_ledger'::regclass"))
                    .as(partition)
                    .isEqualTo(1);
        }
        // The sub-partition inherits protection from its own parent or from the protected root; both are sound.
        assertThat(rows("SELECT count(*) FROM fencing.protected_table WHERE tbl = 'part_ledger_r3_low'::regclass"
                        + " AND resource = 'part' AND parent IN ('part_ledger_r3'::regclass, 'part_ledger'::regclass)"))
                .as("part_ledger_r3_low")
                .isEqualTo(1);
        assertThat(rows("SELECT count(*) FROM fencing.protected_table WHERE tbl = 'inh_ledger_child'::regclass"
                        + " AND resource = 'inh' AND parent = 'inh_ledger'::regclass"))
                .as("inh_ledger_child")
                .isEqualTo(1);
        assertThat(rows("SELECT count(*) FROM fencing.protected_table WHERE tbl IN ('part_ledger'::regclass,"
                        + " 'inh_ledger'::regclass) AND parent IS NULL"))
                .as("the protected roots")
                .isEqualTo(2);
    }

    @Test
    void writeWithTheCurrentTermThroughTheParentStillWorks() throws Exception {
        try (Connection c = adversary.connect("current-leader")) {
            inTransaction(
                    c,
                    "SET LOCAL fencing.term = '5'",
                    "INSERT INTO part_ledger (region, id, note) VALUES (1, 200, 'current')",
                    "UPDATE part_ledger SET note = 'current' WHERE region = 2 AND id = 3",
                    "UPDATE inh_ledger SET note = 'current' WHERE id = 3");
        }
        assertThat(rows("SELECT count(*) FROM part_ledger_r1 WHERE id = 200 AND note = 'current'"))
                .isEqualTo(1);
        assertThat(rows("SELECT count(*) FROM part_ledger_r2 WHERE id = 3 AND note = 'current'"))
                .isEqualTo(1);
        assertThat(rows("SELECT count(*) FROM inh_ledger_child WHERE id = 3 AND note = 'current'"))
                .isEqualTo(1);
    }

    @Test
    void droppingAProtectedPartitionRemovesItsProtectedTableRow() {
        Fixtures.sql(db, "CREATE TABLE part_ledger_r6 PARTITION OF part_ledger FOR VALUES IN (6)");
        long oid = count(db, "SELECT 'part_ledger_r6'::regclass::oid");
        assertThat(rows("SELECT count(*) FROM fencing.protected_table WHERE tbl::oid = " + oid))
                .as("protected_table rows of the new partition")
                .isEqualTo(1);
        Fixtures.sql(db, "DROP TABLE part_ledger_r6");
        assertThat(rows("SELECT count(*) FROM fencing.protected_table WHERE tbl::oid = " + oid))
                .as("protected_table rows of the dropped partition")
                .isZero();
    }

    @Test
    void droppingAProtectedTableRemovesItsProtectedTableRow() {
        Fixtures.sql(
                db,
                "CREATE TABLE dropped_ledger (id bigint PRIMARY KEY)",
                "SELECT fencing.protect_table('dropped_ledger', 'dropped')");
        long oid = count(db, "SELECT 'dropped_ledger'::regclass::oid");
        Fixtures.sql(db, "DROP TABLE dropped_ledger");
        assertThat(rows("SELECT count(*) FROM fencing.protected_table WHERE tbl::oid = " + oid))
                .as("protected_table rows of the dropped table")
                .isZero();
    }

    // ---- R2: a raw term beyond max_term_jump ---------------------------------------------------------------------

    @Test
    void rawWriteWithATermBeyondMaxTermJumpIsRejectedWithFL009AndAudited() throws Exception {
        adversary.protectedTable("jump_raw", "jump-raw", 5, "a");
        assertRejected(
                "FL009",
                "raw UPDATE at term 2^63-1 over mark 5",
                "SET LOCAL fencing.resource = 'jump-raw'",
                "SET LOCAL fencing.term = '9223372036854775807'",
                "UPDATE jump_raw SET note = 'max term' WHERE id = 1");
        assertThat(mark(db, "jump-raw")).isEqualTo(5);
        assertThat(rows("SELECT count(*) FROM jump_raw WHERE note = 'max term'"))
                .isZero();
        assertThat(rows(
                        "SELECT count(*) FROM fencing.rejected_write WHERE resource = 'jump-raw' AND reason = 'term_jump'"
                                + " AND offered_term = 9223372036854775807"))
                .isEqualTo(1);
    }

    // ---- R3: a term applies to one resource ----------------------------------------------------------------------

    @Test
    void termWithoutAResourceScopeCannotAdvanceASecondResourceAndTheOpenTransactionOfItsLeaderGoesOn()
            throws Exception {
        adversary.protectedTable("scope_one", "scope-one", 5, "leader-one");
        adversary.protectedTable("scope_two", "scope-two", 3, "leader-two");
        try (Connection leader = adversary.connect("leader-two")) {
            long leaderPid = backendPid(leader);
            // The scope-two leader's transaction, entered at 3 and open while the unscoped term 5 is tried: an advance
            // of scope-two would terminate it.
            execute(leader, "BEGIN", "SET LOCAL fencing.term = '3'", "SET LOCAL fencing.leader_id = 'leader-two'");
            assertThat(query(leader, "SELECT fencing.enter('scope-two', 3, 'leader-two')"))
                    .isEqualTo("3");
            assertRejected(
                    "FL010",
                    "one transaction at term 5 (no fencing.resource) writing scope-one (mark 5), then"
                            + " scope-two (mark 3)",
                    "SET LOCAL fencing.term = '5'",
                    "UPDATE scope_one SET note = 'unscoped' WHERE id = 1",
                    "UPDATE scope_two SET note = 'unscoped' WHERE id = 1");
            assertThat(mark(db, "scope-two")).isEqualTo(3);
            assertThat(backendAlive(db, leaderPid))
                    .as("the scope-two leader's session")
                    .isTrue();
            execute(leader, "UPDATE scope_two SET note = 'leader' WHERE id = 2", "COMMIT");
        }
        assertThat(rows("SELECT count(*) FROM scope_one WHERE note = 'unscoped'"))
                .isZero();
        assertThat(rows("SELECT count(*) FROM scope_two WHERE note = 'unscoped'"))
                .isZero();
        assertThat(rows("SELECT count(*) FROM scope_two WHERE id = 2 AND note = 'leader'"))
                .isEqualTo(1);
        assertThat(rows("SELECT count(*) FROM fencing.rejected_write WHERE resource = 'scope-two'"
                        + " AND reason = 'unscoped_term' AND offered_term = 5"))
                .isEqualTo(1);
    }

    @Test
    void termScopedToItsResourceAdvancesThatResource() throws Exception {
        adversary.protectedTable("scoped_two", "scoped-two", 3, "leader-two");
        try (Connection c = adversary.connect("leader-four")) {
            inTransaction(
                    c,
                    "SET LOCAL fencing.resource = 'scoped-two'",
                    "SET LOCAL fencing.term = '4'",
                    "UPDATE scoped_two SET note = 'term 4' WHERE id = 1");
        }
        assertThat(mark(db, "scoped-two")).isEqualTo(4);
        assertThat(rows("SELECT count(*) FROM scoped_two WHERE id = 1 AND note = 'term 4'"))
                .isEqualTo(1);
    }

    @Test
    void termScopedToAnotherResourceDoesNotApplyToThisOne() throws Exception {
        adversary.protectedTable("other_one", "other-one", 5, "leader-one");
        adversary.protectedTable("other_two", "other-two", 3, "leader-two");
        assertRejected(
                "FL002",
                "write to other-two (mark 3) with fencing.resource = other-one, fencing.term = 5",
                "SET LOCAL fencing.resource = 'other-one'",
                "SET LOCAL fencing.term = '5'",
                "UPDATE other_two SET note = 'foreign term' WHERE id = 1");
        assertThat(mark(db, "other-two")).isEqualTo(3);
        assertThat(rows("SELECT count(*) FROM other_two WHERE note = 'foreign term'"))
                .isZero();
    }

    // ---- entering lasts for its transaction and leaves nothing behind --------------------------------------------

    private long fenceLocksOf(long pid) {
        return rows("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = "
                + AdversaryRole.FENCE_LOCK_NAMESPACE + "::oid AND pid = " + pid);
    }

    @Test
    void enterLeavesNoEnteredStateAndNoLockOnTheSessionAfterCommit() throws Exception {
        adversary.protectedTable("xact_enter", "xact-enter", 5, "a");
        try (Connection c = adversary.connect("pooled-leader")) {
            long pid = backendPid(c);
            // fencing.enter() takes the fence lock for the transaction; its writes still carry the term.
            inTransaction(
                    c,
                    "SELECT fencing.enter('xact-enter', 5, 'a')",
                    "SET LOCAL fencing.term = '5'",
                    "UPDATE xact_enter SET note = 'term 5' WHERE id = 1");
            assertThat(fenceLocksOf(pid))
                    .as("fence advisory locks of the backend after commit")
                    .isZero();
            Throwable next =
                    catchThrowable(() -> inTransaction(c, "UPDATE xact_enter SET note = 'no term' WHERE id = 2"));
            assertThat(sqlState(next))
                    .as("term-less write in the next transaction of the same session (error: %s)", next)
                    .isEqualTo("FL002");
        }
        assertThat(rows("SELECT count(*) FROM xact_enter WHERE id = 1 AND note = 'term 5'"))
                .isEqualTo(1);
        assertThat(rows("SELECT count(*) FROM xact_enter WHERE note = 'no term'"))
                .isZero();
    }

    @Test
    void rawWriteWithTheCurrentTermLeavesNoEnteredStateAndNoLockOnTheSessionAfterCommit() throws Exception {
        adversary.protectedTable("raw_enter", "raw-enter", 5, "a");
        try (Connection c = adversary.connect("raw-writer")) {
            long pid = backendPid(c);
            inTransaction(c, "SET LOCAL fencing.term = '5'", "UPDATE raw_enter SET note = 'term 5' WHERE id = 1");
            assertThat(fenceLocksOf(pid))
                    .as("fence advisory locks of the backend after commit")
                    .isZero();
            Throwable next =
                    catchThrowable(() -> inTransaction(c, "UPDATE raw_enter SET note = 'no term' WHERE id = 2"));
            assertThat(sqlState(next))
                    .as("term-less write in the next transaction of the same session (error: %s)", next)
                    .isEqualTo("FL002");
        }
        assertThat(rows("SELECT count(*) FROM raw_enter WHERE id = 1 AND note = 'term 5'"))
                .isEqualTo(1);
        assertThat(rows("SELECT count(*) FROM raw_enter WHERE note = 'no term'"))
                .isZero();
    }

    @Test
    void staleEnterReturnsTheMarkAndItsTransactionCannotWrite() throws Exception {
        adversary.protectedTable("xact_stale", "xact-stale", 5, "a");
        try (Connection c = adversary.connect("deposed-pooled-leader")) {
            c.setAutoCommit(false);
            try {
                assertThat(query(c, "SELECT fencing.enter('xact-stale', 4, 'old')"))
                        .isEqualTo("5");
                // A stale entering enters nothing: a write at that term is decided on its own, and is stale.
                execute(c, "SET LOCAL fencing.term = '4'", "SET LOCAL fencing.leader_id = 'old'");
                Throwable write = catchThrowable(() -> execute(c, "UPDATE xact_stale SET note = 'stale' WHERE id = 1"));
                assertThat(sqlState(write))
                        .as("write at term 4 after a stale fencing.enter (error: %s)", write)
                        .isEqualTo("FL001");
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
        assertThat(rows("SELECT count(*) FROM xact_stale WHERE note = 'stale'")).isZero();
        assertThat(mark(db, "xact-stale")).isEqualTo(5);
    }

    // ---- every rejection audited once, with what really happened ---------------------------------------------

    private long auditRows(String resource, String reason) {
        return rows("SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + resource + "' AND reason = '"
                + reason + "' AND source = 'trigger' AND db_user = '" + adversary.name() + "'");
    }

    @Test
    void everyInvalidTermIsRejectedAndAuditedOnce() throws Exception {
        adversary.protectedTable("invalid_terms", "invalid-terms", 5, "a");
        String[] invalid = {"0", "-1", "abc", "5.0", "1e3", "0x10", "9223372036854775808"};
        for (String term : invalid) {
            assertRejected(
                    "FL003",
                    "write with fencing.term " + term,
                    "SET LOCAL fencing.term = '" + term + "'",
                    "UPDATE invalid_terms SET note = 'x' WHERE id = 1");
        }
        assertThat(auditRows("invalid-terms", "invalid_term")).isEqualTo(invalid.length);
        assertThat(rows("SELECT count(*) FROM invalid_terms WHERE note = 'x'")).isZero();
    }

    @Test
    void anOperationLeftFreeNeedsNoTermButATransactionCarryingAStaleTermIsRejectedOnIt() throws Exception {
        Fixtures.sql(
                db,
                "CREATE TABLE free_insert_ledger (id bigint PRIMARY KEY, note text)",
                "SELECT fencing.protect_table('free_insert_ledger', 'free-insert', '2s', ARRAY['UPDATE', 'DELETE'])",
                "SELECT fencing.enter('free-insert', 5, 'a')");
        adversary.grantWrites("free_insert_ledger");
        try (Connection c = adversary.connect("creator")) {
            execute(c, "INSERT INTO free_insert_ledger (id, note) VALUES (1, 'created')");
        }
        assertRejected(
                "FL001",
                "INSERT at the stale term 4",
                "SET LOCAL fencing.term = '4'",
                "INSERT INTO free_insert_ledger (id, note) VALUES (2, 'stale')");
        assertRejected("FL002", "UPDATE without a term", "UPDATE free_insert_ledger SET note = 'x' WHERE id = 1");
        assertThat(rows("SELECT count(*) FROM free_insert_ledger")).isOne();
        assertThat(auditRows("free-insert", "stale_term")).isOne();
    }

    /**
     * A writer of the current term under REPEATABLE READ, paused with its transaction open: the PL/pgSQL slow path
     * holds the mark row FOR SHARE for it, which the next advance needs to lock. The advance ends it instead of failing
     * with FL005 for as long as it stays open.
     */
    @Test
    void aPausedRepeatableReadWriterOfTheCurrentTermDoesNotStopTheNextAdvance() throws Exception {
        adversary.protectedTable("rr_paused_ledger", "rr-paused", 5, "a");
        try (Connection paused = adversary.connect("paused-rr-writer")) {
            long pid = backendPid(paused);
            execute(
                    paused,
                    "BEGIN ISOLATION LEVEL REPEATABLE READ",
                    "SET LOCAL fencing.term = '5'",
                    "UPDATE rr_paused_ledger SET note = 'paused' WHERE id = 1");
            assertThat(Fixtures.text(db, "SELECT fencing.enter('rr-paused', 6, 'b')"))
                    .isEqualTo("6");
            await().atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(20))
                    .alias("the paused writer's backend ends")
                    .until(() -> !backendAlive(db, pid));
        }
        assertThat(rows("SELECT count(*) FROM rr_paused_ledger WHERE note = 'paused'"))
                .isZero();
    }

    /**
     * A REPEATABLE READ transaction whose snapshot was taken before the next term's advance committed cannot see the
     * new mark; its write at the old term is rejected as stale (FL001, not a bare serialization failure) and audited
     * once, with the mark the database holds.
     */
    @Test
    void aRepeatableReadWriterWhoseSnapshotPredatesTheAdvanceIsRejectedAsStaleAndAuditedOnce() throws Exception {
        adversary.protectedTable("rr_stale_ledger", "rr-stale", 5, "a");
        try (Connection old = adversary.connect("rr-old-leader")) {
            execute(old, "BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT count(*) FROM rr_stale_ledger");
            Fixtures.sql(db, "SELECT fencing.enter('rr-stale', 6, 'b')");
            Throwable stale = catchThrowable(() -> execute(
                    old, "SET LOCAL fencing.term = '5'", "UPDATE rr_stale_ledger SET note = 'stale' WHERE id = 1"));
            assertThat(sqlState(stale)).as("%s", stale).isEqualTo("FL001");
            execute(old, "ROLLBACK");
        }
        assertThat(rows("SELECT count(*) FROM rr_stale_ledger WHERE note = 'stale'"))
                .isZero();
        assertThat(rows("SELECT count(*) FROM fencing.rejected_write WHERE resource = 'rr-stale'"
                        + " AND reason = 'stale_term' AND offered_term = 5 AND highest_accepted = 6"
                        + " AND operation = 'UPDATE'"))
                .isOne();
    }

    @Test
    void aNewerTermOutsideReadCommittedIsRejectedWithFL011AndAuditedOnce() throws Exception {
        adversary.protectedTable("isolation_ledger", "isolation", 5, "a");
        for (String level : new String[] {"REPEATABLE READ", "SERIALIZABLE"}) {
            assertRejected(
                    "FL011",
                    "write advancing to term 6 in a " + level + " transaction",
                    "SET TRANSACTION ISOLATION LEVEL " + level,
                    "SET LOCAL fencing.term = '6'",
                    "SET LOCAL fencing.resource = 'isolation'",
                    "UPDATE isolation_ledger SET note = 'x' WHERE id = 1");
        }
        assertThat(mark(db, "isolation")).isEqualTo(5);
        assertThat(rows("SELECT count(*) FROM isolation_ledger WHERE note = 'x'"))
                .isZero();
        assertThat(rows("SELECT count(*) FROM fencing.rejected_write WHERE resource = 'isolation'"
                        + " AND reason = 'advance_isolation' AND offered_term = 6 AND highest_accepted = 5"
                        + " AND table_name = 'public.isolation_ledger' AND operation = 'UPDATE'"))
                .isEqualTo(2);
        assertThat(rows("SELECT trigger_counted FROM fencing.rejection_counts WHERE reason = 'advance_isolation'"))
                .isEqualTo(2);
    }

    @Test
    void termConflictRaisedByATableWriteIsAuditedWithItsTableAndOperation() throws Exception {
        adversary.protectedTable("conflict_ledger", "conflict", 5, "rightful");
        assertRejected(
                "FL001",
                "write at the mark's term by another leader",
                "SET LOCAL fencing.term = '5'",
                "SET LOCAL fencing.leader_id = 'intruder'",
                "UPDATE conflict_ledger SET note = 'x' WHERE id = 1");
        assertThat(rows("SELECT count(*) FROM fencing.rejected_write WHERE resource = 'conflict'"
                        + " AND reason = 'term_conflict' AND table_name = 'public.conflict_ledger' AND operation = 'UPDATE'"
                        + " AND leader_id = 'intruder'"))
                .isEqualTo(1);
    }

    @Test
    void operatorsOnTheCallersSearchPathCannotChangeTheGuardsDecision() throws Exception {
        adversary.protectedTable("operator_ledger", "operators", 5, "a");
        String schema = "evil_" + adversary.name();
        Fixtures.sql(db, "CREATE SCHEMA " + schema + " AUTHORIZATION " + adversary.name());
        // Text operators that say "different" is false and "equal" is true, first on the search path.
        Throwable t;
        try (Connection c = adversary.connect("operator-redefiner")) {
            execute(
                    c,
                    "CREATE FUNCTION " + schema + ".never(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT false'",
                    "CREATE FUNCTION " + schema + ".always(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT true'",
                    "CREATE OPERATOR " + schema + ".<> (LEFTARG = text, RIGHTARG = text, FUNCTION = " + schema
                            + ".never)",
                    "CREATE OPERATOR " + schema + ".= (LEFTARG = text, RIGHTARG = text, FUNCTION = " + schema
                            + ".always)",
                    "SET search_path = " + schema + ", pg_catalog, public");
            t = catchThrowable(() -> inTransaction(c, "UPDATE operator_ledger SET note = 'x' WHERE id = 1"));
        }
        assertThat(sqlState(t))
                .as("term-less write with redefined operators (error: %s)", t)
                .isEqualTo("FL002");
        assertThat(rows("SELECT count(*) FROM operator_ledger WHERE note = 'x'"))
                .isZero();
    }

    @Test
    void foreignKeyCascadeIntoAProtectedTableIsDecidedLikeAnyWriteAndAudited() throws Exception {
        // The child's owner is an ordinary role outside every fencing role: the cascade runs as that owner.
        String owner = "cascade_owner_" + adversary.name();
        Fixtures.sql(
                db,
                "CREATE ROLE " + owner + " NOLOGIN",
                "CREATE TABLE cascade_order (id bigint PRIMARY KEY)",
                "CREATE TABLE cascade_line (id bigint PRIMARY KEY, order_id bigint REFERENCES cascade_order ON DELETE CASCADE)",
                "INSERT INTO cascade_order VALUES (1), (2)",
                "INSERT INTO cascade_line VALUES (1, 1), (2, 2)",
                "SELECT fencing.protect_table('cascade_line', 'cascade')",
                "SELECT fencing.enter('cascade', 5, 'a')",
                "ALTER TABLE cascade_line OWNER TO " + owner,
                "ALTER TABLE cascade_order OWNER TO " + owner);
        adversary.grantWrites("cascade_order");
        // The current term: the cascade goes through (no "permission denied" for the owner).
        Throwable current = attempt("SET LOCAL fencing.term = '5'", "DELETE FROM cascade_order WHERE id = 1");
        assertThat(current).as("cascade with the current term").isNull();
        assertThat(rows("SELECT count(*) FROM cascade_line WHERE id = 1")).isZero();
        // No term: rejected, and audited with the session user and the child table.
        assertRejected("FL002", "term-less cascade", "DELETE FROM cascade_order WHERE id = 2");
        assertThat(rows("SELECT count(*) FROM cascade_line WHERE id = 2")).isEqualTo(1);
        assertThat(rows("SELECT count(*) FROM fencing.rejected_write WHERE resource = 'cascade' AND reason = 'no_term'"
                        + " AND table_name = 'public.cascade_line' AND operation = 'DELETE' AND db_user = '"
                        + adversary.name() + "'"))
                .isEqualTo(1);
    }

    @Test
    void noTableIsListedAsProtectedWithoutItsTrigger() throws Exception {
        Fixtures.sql(
                db,
                "CREATE TABLE unguarded_ledger (id bigint PRIMARY KEY)",
                "GRANT fencing_admin TO " + adversary.name());
        try {
            assertRejected(
                    "42501",
                    "INSERT into fencing.protected_table by fencing_admin",
                    "INSERT INTO fencing.protected_table (tbl, resource) VALUES ('unguarded_ledger', 'part')");
            assertRejected(
                    "FL006",
                    "registering a table that has no trigger",
                    "SELECT fencing.register_protected('unguarded_ledger', 'part', NULL)");
        } finally {
            Fixtures.sql(db, "REVOKE fencing_admin FROM " + adversary.name());
        }
        assertThat(rows("SELECT count(*) FROM fencing.protected_table WHERE tbl = 'unguarded_ledger'::regclass"))
                .isZero();
    }
}
