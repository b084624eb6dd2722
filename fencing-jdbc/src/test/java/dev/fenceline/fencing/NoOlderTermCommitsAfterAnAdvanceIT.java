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

import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Attacks on the fence by an ordinary {@code fencing_app} login ({@link AdversaryRole}: not a superuser, not the
 * owner of the protected tables), each ending in the property the fence promises: once a transaction of a higher term
 * committed for a resource, no transaction carrying an older term commits for it.
 *
 * <p>Every test has a backend write at term 5 (or hold a transaction entered at 5 open) in some way other than forging
 * the mark or a lock it cannot take, lets an advance to term 6 commit or try to, and then asserts that nothing of term
 * 5 commits after it. Nothing sleeps: the order of events is forced by running the sessions' statements one after the
 * other.
 *
 * <p>Each test has its own resource and table (rows 1..3, note {@code initial}).
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NoOlderTermCommitsAfterAnAdvanceIT {
    private TestDatabase db;
    private AdversaryRole adversary;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        // An advance that cannot get the fence lock (a prepared transaction holds it) fails this soon with FL005.
        Fixtures.sql(db, "UPDATE fencing.settings SET value = '1s' WHERE name = 'advance_timeout'");
        adversary = AdversaryRole.create(db);
    }

    @AfterEach
    void rollBackPreparedTransactions() {
        AdversaryRole.rollbackPreparedTransactions(db);
    }

    @AfterAll
    void tearDown() {
        if (adversary != null) {
            adversary.close();
        }
    }

    private String note(String table, long id) {
        return Fixtures.text(db, "SELECT note FROM " + table + " WHERE id = " + id);
    }

    private String terminatedSessions(String resource, long term) {
        return Fixtures.text(
                db,
                "SELECT string_agg(terminated_sessions::text, ',') FROM fencing.term_history" + " WHERE resource = '"
                        + resource + "' AND term = " + term);
    }

    /**
     * Once the advance of {@code resource} to 6 committed, a write of {@code a} carrying term 5 is rejected as stale
     * (FL001), one carrying no term as termless (FL002), and row 3 stays as it was.
     */
    private void assertTermFiveWriteRefusedAfterTheAdvance(Connection a, String resource, String table, String how) {
        assertThat(mark(db, resource))
                .as("mark of %s after the advance", resource)
                .isEqualTo(6);
        String write = "UPDATE " + table + " SET note = 'term 5 after 6', fencing_term = 5 WHERE id = 3";
        Throwable stale = catchThrowable(() -> inTransaction(a, "SET LOCAL fencing.term = '5'", write));
        assertThat(sqlState(stale))
                .as(
                        "a term-5 write of the backend that %s, after the advance of %s to 6 committed (%s);"
                                + " terminated_sessions of that advance: %s",
                        how, resource, stale, terminatedSessions(resource, 6))
                .isEqualTo("FL001");
        Throwable termless = catchThrowable(() -> inTransaction(a, write));
        assertThat(sqlState(termless))
                .as("a write without a term of the backend that %s (%s)", how, termless)
                .isEqualTo("FL002");
        assertThat(note(table, 3))
                .as("row 3 of %s after the term-5 writes were refused", table)
                .isEqualTo("initial");
    }

    // ---- two-phase commit: a prepared transaction keeps the fence lock ------------------------------------------

    /**
     * PREPARE TRANSACTION keeps the transaction's locks, the fence lock too, and {@code pg_advisory_unlock_all()}
     * releases session-level locks only. A prepared transaction of term 5 (an XA branch whose transaction manager has
     * not decided yet) has no backend to terminate: the advance to 6 cannot take the fence lock, fails with FL005
     * naming its gid, and changes nothing. Committed (as the transaction manager may still do), its term-5 write
     * commits before any term-6 transaction; the advance then goes through, and term 5 writes nothing more.
     */
    @Test
    void aPreparedTransactionOfTheOlderTermHoldsTheAdvanceOffUntilItIsResolved() throws Exception {
        adversary.protectedTable("xa_enter", "xa-enter", 5, "a");
        try (Connection a = adversary.connect("leader-a");
                Connection b = adversary.connect("leader-b")) {
            execute(
                    a,
                    "BEGIN",
                    "SET LOCAL fencing.term = '5'",
                    "UPDATE xa_enter SET note = 'prepared at term 5', fencing_term = 5 WHERE id = 1",
                    "SELECT pg_advisory_unlock_all()",
                    "PREPARE TRANSACTION 'xa-enter-branch'");
            Throwable advance = catchThrowable(() -> query(b, "SELECT fencing.enter('xa-enter', 6, 'b')"));
            assertThat(sqlState(advance))
                    .as("the advance while a term-5 transaction is prepared: %s", advance)
                    .isEqualTo("FL005");
            assertThat(advance).hasMessageContaining("xa-enter-branch");
            assertThat(mark(db, "xa-enter")).as("nothing changed").isEqualTo(5);
            execute(a, "COMMIT PREPARED 'xa-enter-branch'");
            assertThat(note("xa_enter", 1)).isEqualTo("prepared at term 5");
            assertThat(query(b, "SELECT fencing.enter('xa-enter', 6, 'b')")).isEqualTo("6");
            assertTermFiveWriteRefusedAfterTheAdvance(
                    a, "xa-enter", "xa_enter", "prepared a term-5 transaction, which was committed before the advance");
        }
        assertThat(count(db, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'xa-enter-branch'"))
                .isZero();
    }

    // ---- objects of the caller's that functions running as the owner could pick up --------------------------------

    /**
     * The fence's functions run as the fencing schema's owner, and the guard with the caller's search_path. The
     * application role owns its temporary schema and may put it first on its search_path: a view of its own named like
     * the table of marks would run its functions with the owner's rights (here: lowering the mark) if entering,
     * advancing or either guard named that table without its schema. They read the real mark and run nothing of the
     * view.
     */
    @Test
    void aTemporaryViewOfTheApplicationRoleNamedLikeTheTableOfMarksRunsNothingAsTheOwner() throws Exception {
        String original = Fixtures.text(db, "SELECT fencing.guard_implementation()");
        try {
            for (String guard :
                    original.equals("native") ? new String[] {"native", "plpgsql"} : new String[] {"plpgsql"}) {
                Fixtures.sql(
                        db,
                        guard.equals("native")
                                ? "SELECT fencing.use_native_guard()"
                                : "SELECT fencing.use_plpgsql_guard()");
                String table = "temp_swap_" + guard;
                String resource = "temp-swap-" + guard;
                adversary.protectedTable(table, resource, 5, "a");
                try (Connection a = adversary.connect("leader-a")) {
                    execute(
                            a,
                            "CREATE FUNCTION pg_temp.lower_the_mark() RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN"
                                    + " UPDATE fencing.high_water_mark SET highest_accepted = 2 WHERE resource = '"
                                    + resource
                                    + "'; RETURN true; END $f$",
                            "CREATE TEMPORARY VIEW high_water_mark AS SELECT m.* FROM fencing.high_water_mark m"
                                    + " WHERE pg_temp.lower_the_mark()",
                            "GRANT SELECT ON high_water_mark TO PUBLIC",
                            "SET search_path = pg_temp, public");
                    // an advance by the guard (a raw write with a newer term), a write at the mark, and an advance
                    // by fencing.enter
                    inTransaction(
                            a,
                            "SET LOCAL fencing.term = '6'",
                            "SET LOCAL fencing.resource = '" + resource + "'",
                            "SET LOCAL fencing.leader_id = 'a'",
                            "UPDATE " + table + " SET note = 'term 6', fencing_term = 6 WHERE id = 1");
                    inTransaction(
                            a,
                            "SET LOCAL fencing.term = '6'",
                            "UPDATE " + table + " SET note = 'term 6 again', fencing_term = 6 WHERE id = 2");
                    inTransaction(a, "SELECT fencing.enter('" + resource + "', 7, 'a')");
                }
                assertThat(Fixtures.text(
                                db,
                                "SELECT string_agg(previous_term || '>' || term, ',' ORDER BY term)"
                                        + " FROM fencing.term_history WHERE resource = '" + resource
                                        + "' AND term > 5"))
                        .as("the advances of %s with the %s guard (previous>new)", resource, guard)
                        .isEqualTo("5>6,6>7");
                assertThat(mark(db, resource))
                        .as("the mark with the %s guard", guard)
                        .isEqualTo(7);
                assertThat(note(table, 1) + ", " + note(table, 2)).isEqualTo("term 6, term 6 again");
            }
        } finally {
            Fixtures.sql(db, "SELECT fencing.use_" + original + "_guard()");
        }
    }

    // ---- a backend that advanced the resource itself ------------------------------------------------------------

    /**
     * A backend whose earlier transaction entered at 5 (its write; the native guard remembers an entering for its
     * transaction only) advances the resource to 6 itself, with {@code fencing.enter} in a transaction of its own.
     * Nothing of term 5 is left on the backend: a later write carrying term 5, even from a session-level
     * {@code fencing.term = 5} (what another client of a pooler could leave), is stale.
     */
    @Test
    void aBackendThatAdvancedTheResourceWithEnterCannotWriteAtTheOlderTermAfterwards() throws Exception {
        adversary.protectedTable("own_xact_advance", "own-xact-advance", 5, "a");
        try (Connection a = adversary.connect("leader-a")) {
            inTransaction(
                    a,
                    "SET LOCAL fencing.term = '5'",
                    "UPDATE own_xact_advance SET note = 'term 5', fencing_term = 5 WHERE id = 2");
            inTransaction(a, "SELECT fencing.enter('own-xact-advance', 6, 'b')");
            assertThat(mark(db, "own-xact-advance")).isEqualTo(6);
            execute(a, "SET fencing.term = '5'");
            Throwable late = catchThrowable(() -> inTransaction(
                    a, "UPDATE own_xact_advance SET note = 'term 5 after 6', fencing_term = 5 WHERE id = 1"));
            assertThat(sqlState(late))
                    .as(
                            "a write carrying a session-level fencing.term = 5 after the same backend advanced the resource"
                                    + " to 6 (%s)",
                            late)
                    .isEqualTo("FL001");
            execute(a, "RESET fencing.term");
            assertTermFiveWriteRefusedAfterTheAdvance(
                    a,
                    "own-xact-advance",
                    "own_xact_advance",
                    "wrote at 5 and then advanced the resource itself with fencing.enter");
        }
        assertThat(note("own_xact_advance", 1)).isEqualTo("initial");
        assertThat(note("own_xact_advance", 2)).isEqualTo("term 5");
    }

    /** The same with the backend's own advance made by a raw write carrying term 6 and fencing.resource. */
    @Test
    void aBackendThatAdvancedTheResourceWithARawWriteCannotWriteAtTheOlderTermAfterwards() throws Exception {
        adversary.protectedTable("own_raw_advance", "own-raw-advance", 5, "a");
        try (Connection a = adversary.connect("leader-a")) {
            inTransaction(
                    a,
                    "SET LOCAL fencing.term = '5'",
                    "UPDATE own_raw_advance SET note = 'term 5', fencing_term = 5 WHERE id = 1");
            inTransaction(
                    a,
                    "SET LOCAL fencing.resource = 'own-raw-advance'",
                    "SET LOCAL fencing.term = '6'",
                    "UPDATE own_raw_advance SET note = 'term 6', fencing_term = 6 WHERE id = 2");
            assertThat(mark(db, "own-raw-advance")).isEqualTo(6);
            assertTermFiveWriteRefusedAfterTheAdvance(
                    a,
                    "own-raw-advance",
                    "own_raw_advance",
                    "wrote at 5 and then advanced the resource itself with a raw SET LOCAL fencing.term = 6 write");
        }
    }

    // ---- an advance under REPEATABLE READ ------------------------------------------------------------------------

    /**
     * An advance must see the mark and the fence lock's holders as of now; under REPEATABLE READ (e.g. a
     * default_transaction_isolation of the pool or the database) it would read them from a snapshot older than its
     * waits. It refuses (FL011) before it waits, terminates or changes anything: the open term-5 transaction is left
     * alone and may commit (no higher term has), and an advance under READ COMMITTED then deposes term 5.
     */
    @Test
    void anAdvanceUnderRepeatableReadIsRefusedBeforeItEndsOrChangesAnything() throws Exception {
        adversary.protectedTable("rr_advance", "rr-advance", 5, "a");
        try (Connection a = adversary.connect("leader-a");
                Connection b = adversary.connect("leader-b")) {
            long aPid = backendPid(a);
            execute(
                    a,
                    "BEGIN",
                    "SET LOCAL fencing.term = '5'",
                    "UPDATE rr_advance SET note = 'term 5, open during the advance', fencing_term = 5 WHERE id = 1",
                    "SELECT pg_advisory_unlock_all()");
            execute(b, "SET default_transaction_isolation = 'repeatable read'");
            Throwable refused = catchThrowable(() -> query(b, "SELECT fencing.enter('rr-advance', 6, 'b')"));
            assertThat(sqlState(refused))
                    .as("an advance under REPEATABLE READ: %s", refused)
                    .isEqualTo("FL011");
            assertThat(mark(db, "rr-advance")).as("nothing changed").isEqualTo(5);
            assertThat(backendAlive(db, aPid))
                    .as("the open term-5 transaction's backend")
                    .isTrue();
            execute(a, "COMMIT");
            assertThat(note("rr_advance", 1)).isEqualTo("term 5, open during the advance");
            execute(b, "SET default_transaction_isolation = 'read committed'");
            assertThat(query(b, "SELECT fencing.enter('rr-advance', 6, 'b')")).isEqualTo("6");
            assertTermFiveWriteRefusedAfterTheAdvance(
                    a, "rr-advance", "rr_advance", "committed at 5 after an advance under REPEATABLE READ was refused");
        }
    }

    // ---- pg_stat_activity read earlier in the advancing transaction --------------------------------------------

    /**
     * pg_stat_activity is a per-transaction snapshot once read, and an advance runs inside whatever transaction its
     * caller opened (here one that read pg_stat_activity, and entered another resource, first). The advance finds the
     * fence lock's holders in pg_locks, which is read afresh every time: a backend that connected and began its term-5
     * transaction after that snapshot is ended all the same, and its write never commits.
     */
    @Test
    void anAdvanceEndsATransactionThatBeganAfterTheAdvancingTransactionFirstReadPgStatActivity() throws Exception {
        adversary.protectedTable("stats_late", "stats-late", 5, "a");
        adversary.protectedTable("stats_other", "stats-other", 1, "b");
        try (Connection b = adversary.connect("leader-b")) {
            execute(b, "BEGIN", "SELECT count(*) FROM pg_stat_activity", "SELECT fencing.enter('stats-other', 1, 'b')");
            try (Connection a = adversary.connect("leader-a")) {
                execute(
                        a,
                        "BEGIN",
                        "SET LOCAL fencing.term = '5'",
                        "UPDATE stats_late SET note = 'term 5, open during the advance', fencing_term = 5 WHERE id = 1");
                assertThat(query(b, "SELECT fencing.enter('stats-late', 6, 'b')"))
                        .isEqualTo("6");
                execute(b, "COMMIT");
                Throwable commit = catchThrowable(() -> execute(a, "COMMIT"));
                assertThat(AdversaryRole.connectionLost(commit))
                        .as("the COMMIT of the term-5 transaction the advance found holding the fence lock: %s", commit)
                        .isTrue();
            }
            assertThat(terminatedSessions("stats-late", 6))
                    .as("terminated_sessions of the advance")
                    .isEqualTo("1");
            assertThat(note("stats_late", 1)).isEqualTo("initial");
            try (Connection a = adversary.connect("leader-a")) {
                assertTermFiveWriteRefusedAfterTheAdvance(
                        a,
                        "stats-late",
                        "stats_late",
                        "reconnected after its term-5 transaction was ended by the advance");
            }
        }
    }
}
