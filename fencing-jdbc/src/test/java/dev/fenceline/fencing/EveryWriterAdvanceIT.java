package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.backendAlive;
import static dev.fenceline.fencing.AdversaryRole.backendPid;
import static dev.fenceline.fencing.AdversaryRole.execute;
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
 * The advance holds against every way an ordinary {@code fencing_app} role can keep an older term alive: a prepared
 * (two-phase) transaction, a released fence lock, a row lock on the mark, a huge term jump. These are decisions of
 * the entering and the advance ({@code fencing.enter()}, the same code as the guard's slow path), so they run once
 * (the guard implementation does not matter); the guard's side is {@link EveryWriterContract}.
 *
 * <p>Nothing here sleeps: a write is made "late" by holding it (open or prepared transaction) across the advance, and
 * the assertions are on committed state (rows, marks, term history, audit) and SQLSTATEs. advance_timeout is 1 s so
 * that FL005 paths are quick; {@link AdversaryRole#QUERY_TIMEOUT_SECONDS} only turns an unbounded wait into a failure.
 *
 * <p>Every resource and table belongs to one test, so the tests do not depend on each other's order.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EveryWriterAdvanceIT {
    private TestDatabase db;
    private AdversaryRole adversary;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        Fixtures.sql(db, "UPDATE fencing.settings SET value = '1s' WHERE name = 'advance_timeout'");
        adversary = AdversaryRole.create(db);
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

    private long termHistoryRows(String resource, long term) {
        return count(
                db, "SELECT count(*) FROM fencing.term_history WHERE resource = '" + resource + "' AND term = " + term);
    }

    private String note(String table, long id) {
        return Fixtures.text(db, "SELECT note FROM " + table + " WHERE id = " + id);
    }

    /**
     * A transaction of session A enters at 5 with {@code fencing.enter()}, updates row 1 at its term and is prepared as
     * {@code gid}; A's session stays open.
     */
    private void prepareTermFiveUpdate(Connection a, String resource, String table, String gid) throws Exception {
        execute(
                a,
                "BEGIN",
                "SELECT fencing.enter('" + resource + "', 5, 'a')",
                "SET LOCAL fencing.term = '5'",
                "SET LOCAL fencing.leader_id = 'a'",
                "UPDATE " + table + " SET note = 'term 5', fencing_term = 5 WHERE id = 1",
                "PREPARE TRANSACTION '" + gid + "'");
    }

    private void assertAdvanceRefusedNamingPreparedTransaction(Connection b, String resource, String gid) {
        Throwable refused = catchThrowable(() -> execute(b, "SELECT fencing.enter('" + resource + "', 6, 'b')"));
        assertThat(sqlState(refused))
                .as(
                        "advance of %s to 6 while prepared transaction %s of term 5 is unresolved (error: %s; mark now %s)",
                        resource, gid, refused, mark(db, resource))
                .isEqualTo("FL005");
        assertThat(refused.getMessage())
                .as("FL005 names the prepared transaction")
                .contains(gid);
        assertThat(mark(db, resource))
                .as("mark of %s after the refused advance", resource)
                .isEqualTo(5);
        assertThat(termHistoryRows(resource, 6))
                .as("term_history rows for term 6")
                .isZero();
    }

    // ---- two-phase commit ----------------------------------------------------------------------------------------

    @Test
    void advancePastAPreparedTransactionOfTheOlderTermFailsNamingItsGidUntilItIsRolledBack() throws Exception {
        String gid = "fence-2pc-rollback";
        adversary.protectedTable("tpc_rollback", "tpc-rollback", 5, "a");
        try (Connection a = adversary.connect("leader-a");
                Connection b = adversary.connect("leader-b")) {
            prepareTermFiveUpdate(a, "tpc-rollback", "tpc_rollback", gid);
            assertAdvanceRefusedNamingPreparedTransaction(b, "tpc-rollback", gid);
            try (Connection transactionManager = adversary.connect("transaction-manager")) {
                execute(transactionManager, "ROLLBACK PREPARED '" + gid + "'");
            }
            assertThat(query(b, "SELECT fencing.enter('tpc-rollback', 6, 'b')")).isEqualTo("6");
        }
        assertThat(mark(db, "tpc-rollback")).isEqualTo(6);
        assertThat(note("tpc_rollback", 1)).isEqualTo("initial");
    }

    @Test
    void preparedTransactionOfTheOlderTermCanOnlyCommitBeforeTheAdvanceToTheNewerTerm() throws Exception {
        String gid = "fence-2pc-commit";
        adversary.protectedTable("tpc_commit", "tpc-commit", 5, "a");
        String committedAt;
        try (Connection a = adversary.connect("leader-a");
                Connection b = adversary.connect("leader-b")) {
            prepareTermFiveUpdate(a, "tpc-commit", "tpc_commit", gid);
            assertAdvanceRefusedNamingPreparedTransaction(b, "tpc-commit", gid);
            try (Connection transactionManager = adversary.connect("transaction-manager")) {
                execute(transactionManager, "COMMIT PREPARED '" + gid + "'");
                committedAt = query(transactionManager, "SELECT clock_timestamp()::text");
            }
            assertThat(note("tpc_commit", 1))
                    .as("the prepared term-5 update committed")
                    .isEqualTo("term 5");
            assertThat(query(b, "SELECT fencing.enter('tpc-commit', 6, 'b')")).isEqualTo("6");
            execute(
                    b,
                    "BEGIN",
                    "SET LOCAL fencing.term = '6'",
                    "SET LOCAL fencing.leader_id = 'b'",
                    "UPDATE tpc_commit SET note = 'term 6', fencing_term = 6 WHERE id = 1",
                    "COMMIT");
        }
        assertThat(Fixtures.text(db, "SELECT note || ':' || fencing_term FROM tpc_commit WHERE id = 1"))
                .isEqualTo("term 6:6");
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.term_history WHERE resource = 'tpc-commit' AND term = 6"
                                + " AND accepted_at > '" + committedAt + "'::timestamptz"))
                .as("term 6 was accepted after the term-5 prepared transaction committed")
                .isEqualTo(1);
    }

    @Test
    void preparedTransactionThatOnlyEnteredHoldsTheFenceUntilItIsResolved() throws Exception {
        // Entered with fencing.enter() and prepared without writing anything: the fence lock is all it holds.
        String gid = "fence-2pc-xact";
        adversary.protectedTable("tpc_xact", "tpc-xact", 5, "a");
        try (Connection a = adversary.connect("pooled-leader-a");
                Connection b = adversary.connect("leader-b")) {
            execute(a, "BEGIN", "SELECT fencing.enter('tpc-xact', 5, 'a')", "PREPARE TRANSACTION '" + gid + "'");
            assertAdvanceRefusedNamingPreparedTransaction(b, "tpc-xact", gid);
            try (Connection transactionManager = adversary.connect("transaction-manager")) {
                execute(transactionManager, "ROLLBACK PREPARED '" + gid + "'");
            }
            assertThat(query(b, "SELECT fencing.enter('tpc-xact', 6, 'b')")).isEqualTo("6");
        }
        assertThat(note("tpc_xact", 1)).isEqualTo("initial");
    }

    @Test
    void preparedTransactionEnteredWithARawTermHoldsTheFenceUntilItIsResolved() throws Exception {
        String gid = "fence-2pc-raw";
        adversary.protectedTable("tpc_raw", "tpc-raw", 5, "a");
        try (Connection a = adversary.connect("raw-writer-a");
                Connection b = adversary.connect("leader-b")) {
            execute(
                    a,
                    "BEGIN",
                    "SET LOCAL fencing.term = '5'",
                    "UPDATE tpc_raw SET note = 'term 5', fencing_term = 5 WHERE id = 1",
                    "PREPARE TRANSACTION '" + gid + "'");
            assertAdvanceRefusedNamingPreparedTransaction(b, "tpc-raw", gid);
            try (Connection transactionManager = adversary.connect("transaction-manager")) {
                execute(transactionManager, "ROLLBACK PREPARED '" + gid + "'");
            }
            assertThat(query(b, "SELECT fencing.enter('tpc-raw', 6, 'b')")).isEqualTo("6");
        }
        assertThat(note("tpc_raw", 1)).isEqualTo("initial");
    }

    // ---- releasing the fence's advisory lock ---------------------------------------------------------------------

    /** A terminated backend leaves pg_stat_activity shortly after it released its locks. */
    private void awaitBackendGone(long pid) {
        await().atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> !backendAlive(db, pid));
    }

    private long fenceLocksOf(long pid) {
        return count(
                db,
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = "
                        + AdversaryRole.FENCE_LOCK_NAMESPACE + "::oid AND granted AND pid = " + pid);
    }

    /**
     * A transaction of session A enters at 5 by its write and calls {@code unlock}; the unlock functions release
     * session-level advisory locks only, so the transaction-level fence lock stays held, and B's advance to 6 must
     * terminate A's transaction before it moves the mark.
     */
    private void transactionThatTriedToReleaseTheFenceLockIsStillTerminatedByTheNextAdvance(
            String resource, String table, String unlock) throws Exception {
        adversary.protectedTable(table, resource, 5, "a");
        long aPid;
        try (Connection a = adversary.connect("leader-a");
                Connection b = adversary.connect("leader-b")) {
            aPid = backendPid(a);
            execute(
                    a,
                    "BEGIN",
                    "SET LOCAL fencing.term = '5'",
                    "SET LOCAL fencing.leader_id = 'a'",
                    "UPDATE " + table + " SET note = 'term 5', fencing_term = 5 WHERE id = 1");
            query(a, unlock);
            assertThat(fenceLocksOf(aPid))
                    .as("fence locks of the transaction entered at 5 after %s", unlock)
                    .isEqualTo(1);
            assertThat(query(b, "SELECT fencing.enter('" + resource + "', 6, 'b')"))
                    .isEqualTo("6");
            Throwable late = catchThrowable(() -> execute(
                    a, "UPDATE " + table + " SET note = 'term 5 after 6', fencing_term = 5 WHERE id = 2", "COMMIT"));
            assertThat(late)
                    .as(
                            "the transaction entered at 5 (fence lock 'released' by %s) after the advance to 6;"
                                    + " terminated_sessions of the advance: %s",
                            unlock,
                            Fixtures.text(
                                    db,
                                    "SELECT string_agg(terminated_sessions::text, ',') FROM fencing.term_history"
                                            + " WHERE resource = '" + resource + "' AND term = 6"))
                    .isNotNull()
                    .matches(AdversaryRole::connectionLost, "lost its connection (57P01 or class 08)");
        }
        assertThat(note(table, 1))
                .as("row written by the terminated transaction")
                .isEqualTo("initial");
        assertThat(note(table, 2))
                .as("row written by the terminated transaction")
                .isEqualTo("initial");
        assertThat(count(
                        db,
                        "SELECT terminated_sessions FROM fencing.term_history WHERE resource = '" + resource
                                + "' AND term = 6"))
                .as("terminated_sessions of the advance to 6")
                .isGreaterThanOrEqualTo(1);
        awaitBackendGone(aPid);
    }

    @Test
    void transactionThatCalledAdvisoryUnlockAllIsStillTerminatedByTheNextAdvance() throws Exception {
        transactionThatTriedToReleaseTheFenceLockIsStillTerminatedByTheNextAdvance(
                "unlock-all", "unlock_all", "SELECT pg_advisory_unlock_all()::text");
    }

    @Test
    void transactionThatReleasedTheSharedFenceKeyIsStillTerminatedByTheNextAdvance() throws Exception {
        transactionThatTriedToReleaseTheFenceLockIsStillTerminatedByTheNextAdvance(
                "unlock-shared",
                "unlock_shared",
                "SELECT pg_advisory_unlock_shared(" + AdversaryRole.FENCE_LOCK_NAMESPACE + ", lock_key::integer)::text"
                        + " FROM fencing.high_water_mark WHERE resource = 'unlock-shared'");
    }

    @Test
    void transactionThatEnteredWithoutWritingAndCalledAdvisoryUnlockAllNeverWritesAfterTheAdvance() throws Exception {
        adversary.protectedTable("unlock_open", "unlock-open", 5, "a");
        try (Connection a = adversary.connect("leader-a");
                Connection b = adversary.connect("leader-b")) {
            long aPid = backendPid(a);
            execute(a, "BEGIN", "SELECT fencing.enter('unlock-open', 5, 'a')", "SELECT pg_advisory_unlock_all()");
            // The entering transaction stays open and still holds the fence lock: the advance terminates it before it
            // moves the mark.
            assertThat(fenceLocksOf(aPid))
                    .as("fence locks of the open entering transaction")
                    .isEqualTo(1);
            assertThat(query(b, "SELECT fencing.enter('unlock-open', 6, 'b')")).isEqualTo("6");
            awaitBackendGone(aPid); // the session of the transaction entered at 5 ('released' fence key in it)
            assertThat(mark(db, "unlock-open")).isEqualTo(6);
            Throwable late = catchThrowable(() -> execute(
                    a,
                    "SET LOCAL fencing.term = '5'",
                    "UPDATE unlock_open SET note = 'term 5 after 6', fencing_term = 5 WHERE id = 1"));
            assertThat(late)
                    .as("the write of the transaction entered at 5 after the advance to 6")
                    .isNotNull()
                    .matches(AdversaryRole::connectionLost, "lost its connection (57P01 or class 08)");
        }
        assertThat(note("unlock_open", 1))
                .as("row written by the terminated transaction")
                .isEqualTo("initial");
    }

    // ---- R1: every wait of an advance is bounded by advance_timeout ----------------------------------------------

    @Test
    void anAdvanceEndsAnOpenRepeatableReadEnterThatHoldsTheMarkRow() throws Exception {
        adversary.protectedTable("rr_open", "rr-open", 5, "a");
        try (Connection a = adversary.connect("stale-reader");
                Connection b = adversary.connect("leader-b")) {
            long aPid = backendPid(a);
            // A stale enter under REPEATABLE READ reads the mark FOR SHARE, a row lock the advance must take first;
            // it also holds the fence lock, so the advance ends it after half of advance_timeout instead of failing.
            execute(a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
            assertThat(query(a, "SELECT fencing.enter('rr-open', 4, 'old')")).isEqualTo("5");
            execute(b, "SET lock_timeout = 0");
            assertThat(query(b, "SELECT fencing.enter('rr-open', 6, 'b')")).isEqualTo("6");
            assertThat(mark(db, "rr-open")).isEqualTo(6);
            await().atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(20))
                    .alias("the REPEATABLE READ transaction's backend ends")
                    .until(() -> !backendAlive(db, aPid));
        }
    }

    @Test
    void advanceEndsWithinAdvanceTimeoutWhileAMigrationTransactionProtectingATableIsOpen() throws Exception {
        adversary.protectedTable("migrating", "migrating", 5, "a");
        Fixtures.sql(db, "CREATE TABLE migrating_new (id bigint PRIMARY KEY)");
        try (Connection admin = Fixtures.connect(db);
                Connection b = adversary.connect("leader-b")) {
            execute(admin, "BEGIN", "SELECT fencing.protect_table('migrating_new', 'migrating')");
            execute(b, "SET lock_timeout = 0");
            Throwable outcome = catchThrowable(() -> execute(b, "SELECT fencing.enter('migrating', 6, 'b')"));
            if (outcome != null) {
                assertThat(sqlState(outcome))
                        .as("advance while a migration transaction is open: %s", outcome)
                        .isEqualTo("FL005");
                assertThat(mark(db, "migrating")).isEqualTo(5);
            }
            execute(admin, "COMMIT");
            assertThat(query(b, "SELECT fencing.enter('migrating', 6, 'b')")).isEqualTo("6");
        }
        assertThat(count(db, "SELECT count(*) FROM fencing.protected_table WHERE tbl = 'migrating_new'::regclass"))
                .isEqualTo(1);
    }

    // ---- R2: one advance moves the mark by at most max_term_jump -------------------------------------------------

    @Test
    void advanceByMoreThanMaxTermJumpIsRejectedWithFL009AuditedAndChangesNothing() throws Exception {
        adversary.protectedTable("jump_far", "jump-far", 5, "a");
        try (Connection b = adversary.connect("leader-b")) {
            Throwable refused = catchThrowable(() -> execute(b, "SELECT fencing.enter('jump-far', 1000006, 'b')"));
            assertThat(sqlState(refused))
                    .as("enter at 1000006 over mark 5 (error: %s; mark now %s)", refused, mark(db, "jump-far"))
                    .isEqualTo("FL009");
        }
        assertThat(mark(db, "jump-far")).isEqualTo(5);
        assertThat(termHistoryRows("jump-far", 1000006)).isZero();
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE resource = 'jump-far'"
                                + " AND reason = 'term_jump' AND offered_term = 1000006"))
                .isEqualTo(1);
    }

    @Test
    void advanceByExactlyMaxTermJumpIsAccepted() throws Exception {
        adversary.protectedTable("jump_edge", "jump-edge", 5, "a");
        try (Connection b = adversary.connect("leader-b")) {
            assertThat(query(b, "SELECT fencing.enter('jump-edge', 1000005, 'b')"))
                    .isEqualTo("1000005");
        }
        assertThat(mark(db, "jump-edge")).isEqualTo(1000005);
    }

    @Test
    void maxTermJumpSettingTakesEffectForTheNextAdvance() throws Exception {
        adversary.protectedTable("jump_set", "jump-set", 5, "a");
        try (Connection admin = Fixtures.connect(db);
                Connection b = adversary.connect("leader-b")) {
            try (var s = AdversaryRole.statement(admin)) {
                assertThat(s.executeUpdate("UPDATE fencing.settings SET value = '10' WHERE name = 'max_term_jump'"))
                        .as("fencing.settings rows named max_term_jump")
                        .isEqualTo(1);
            }
            try {
                Throwable refused = catchThrowable(() -> execute(b, "SELECT fencing.enter('jump-set', 16, 'b')"));
                assertThat(sqlState(refused))
                        .as("enter at 16 over mark 5 with max_term_jump 10 (error: %s)", refused)
                        .isEqualTo("FL009");
                assertThat(mark(db, "jump-set")).isEqualTo(5);
                assertThat(query(b, "SELECT fencing.enter('jump-set', 15, 'b')"))
                        .isEqualTo("15");
            } finally {
                execute(admin, "UPDATE fencing.settings SET value = '1000000' WHERE name = 'max_term_jump'");
            }
        }
        assertThat(mark(db, "jump-set")).isEqualTo(15);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE resource = 'jump-set'"
                                + " AND reason = 'term_jump' AND offered_term = 16"))
                .isEqualTo(1);
    }
}
