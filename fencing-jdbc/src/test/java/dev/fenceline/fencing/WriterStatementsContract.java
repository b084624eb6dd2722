package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.execute;
import static dev.fenceline.fencing.AdversaryRole.query;
import static dev.fenceline.fencing.AdversaryRole.sqlState;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.SQLException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The writer's two statements of its own, {@code fencing.begin_write(...)} before the work and
 * {@code fencing.check_writers_transaction()} with its COMMIT, called as SQL by an ordinary {@code fencing_app} login.
 * Runs against both implementations ({@link WriterStatementsPlpgsqlIT}, {@link WriterStatementsNativeIT}), which must
 * behave alike: settings local to the transaction, the mark returned, transactions other than READ COMMITTED, READ
 * WRITE refused, and the check passing only in the transaction {@code begin_write} began.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class WriterStatementsContract {
    private static final String BEGIN_WRITE = "SELECT fencing.begin_write('ws', 4, 'leader-4', 1500, 700, 9000)";

    private TestDatabase db;
    private AdversaryRole app;

    /** Switches the freshly migrated database's implementation; returns its expected name. */
    abstract String useGuard(TestDatabase db);

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        assertThat(useGuard(db)).isEqualTo(Fixtures.text(db, "SELECT fencing.guard_implementation()"));
        app = AdversaryRole.create(db);
        app.protectedTable("ws_ledger", "ws", 4, "leader-4");
    }

    @AfterAll
    void dropRole() {
        app.close();
    }

    @Test
    void beginWriteSetsTheTransactionsSettingsAndReturnsTheMarkAndTheSessionKeepsNoneOfThem() throws Exception {
        try (Connection c = app.connect("begin-write-settings")) {
            execute(
                    c,
                    "SET statement_timeout = '42s'",
                    "SET lock_timeout = '43s'",
                    "SET idle_in_transaction_session_timeout = '44s'",
                    "SET fencing.term = '99'",
                    "SET fencing.break_glass = 'left behind'");
            c.setAutoCommit(false);
            assertThat(query(c, BEGIN_WRITE)).isEqualTo("4");
            assertThat(
                            query(
                                    c,
                                    "SELECT concat_ws(' ', current_setting('statement_timeout'),"
                                            + " current_setting('lock_timeout'), current_setting('idle_in_transaction_session_timeout'),"
                                            + " current_setting('fencing.term'), current_setting('fencing.resource'),"
                                            + " current_setting('fencing.leader_id'), '[' || current_setting('fencing.break_glass') || ']')"))
                    .isEqualTo("1500ms 700ms 9s 4 ws leader-4 []");
            execute(c, "UPDATE ws_ledger SET note = 'written' WHERE id = 1");
            execute(c, "SELECT fencing.check_writers_transaction()");
            c.commit();
            c.setAutoCommit(true);
            assertThat(query(
                            c,
                            "SELECT concat_ws(' ', current_setting('statement_timeout'),"
                                    + " current_setting('lock_timeout'), current_setting('idle_in_transaction_session_timeout'),"
                                    + " current_setting('fencing.term'), current_setting('fencing.break_glass'))"))
                    .isEqualTo("42s 43s 44s 99 left behind");
        }
        assertThat(Fixtures.text(db, "SELECT note FROM ws_ledger WHERE id = 1")).isEqualTo("written");
    }

    /**
     * At the mark's term the writer's first statement enters the transaction (the fence lock, shared), so that the
     * next advance ends it even before its work writes; at an older or a newer term it enters nothing (the guard
     * rejects the one at its first write, the writer advances the other before the work).
     */
    @Test
    void beginWriteEntersTheTransactionAtTheMarksTermOnly() throws Exception {
        String entered = "SELECT count(*) FROM fencing.entered_transactions WHERE resource = 'ws'";
        for (long term : new long[] {3, 5}) {
            try (Connection c = app.connect("begin-write-term-" + term)) {
                c.setAutoCommit(false);
                query(c, "SELECT fencing.begin_write('ws', " + term + ", 'leader-" + term + "', 0, 0, 0)");
                assertThat(Fixtures.count(db, entered))
                        .as("entered at term %s", term)
                        .isZero();
                c.rollback();
            }
        }
        try (Connection c = app.connect("begin-write-at-the-mark")) {
            c.setAutoCommit(false);
            query(c, BEGIN_WRITE);
            assertThat(Fixtures.count(db, entered))
                    .as("entered at the mark's term")
                    .isOne();
            c.rollback();
        }
        assertThat(Fixtures.count(db, entered)).isZero();
    }

    @Test
    void beginWriteReturnsNullForAResourceThatIsNotRegistered() throws Exception {
        try (Connection c = app.connect("begin-write-unknown")) {
            c.setAutoCommit(false);
            assertThat(query(c, "SELECT fencing.begin_write('no-such-resource', 1, NULL, 0, 0, 0)"))
                    .isNull();
            c.rollback();
        }
    }

    @Test
    void beginWriteRefusesARepeatableReadTransactionWithFL014() throws Exception {
        assertRefused("FL014", "SET default_transaction_isolation = 'repeatable read'", BEGIN_WRITE);
    }

    @Test
    void beginWriteRefusesASerializableTransactionWithFL014() throws Exception {
        assertRefused("FL014", "SET default_transaction_isolation = 'serializable'", BEGIN_WRITE);
    }

    @Test
    void beginWriteRefusesAReadOnlyTransactionWithFL014() throws Exception {
        assertRefused("FL014", "SET default_transaction_read_only = on", BEGIN_WRITE);
    }

    @Test
    void beginWriteRefusesATermBelowOneWithFL003() throws Exception {
        assertRefused("FL003", "SELECT 1", "SELECT fencing.begin_write('ws', 0, NULL, 0, 0, 0)");
    }

    @Test
    void beginWriteRefusesANegativeTimeoutWithFL003() throws Exception {
        assertRefused("FL003", "SELECT 1", "SELECT fencing.begin_write('ws', 4, NULL, 0, -1, 0)");
    }

    @Test
    void beginWriteRefusesALeaderIdOver200BytesWithFL003() throws Exception {
        assertRefused("FL003", "SELECT 1", "SELECT fencing.begin_write('ws', 4, repeat('x', 201), 0, 0, 0)");
    }

    @Test
    void checkFailsWithFL013InATransactionBeginWriteDidNotBegin() throws Exception {
        assertRefused("FL013", "SELECT 1", "SELECT fencing.check_writers_transaction()");
    }

    @Test
    void checkFailsWithFL013AfterTheWorkCommittedAndWentOnInANewTransaction() throws Exception {
        try (Connection c = app.connect("check-after-commit")) {
            c.setAutoCommit(false);
            query(c, BEGIN_WRITE);
            execute(c, "COMMIT", "SELECT 1");
            Throwable t = catchThrowable(() -> execute(c, "SELECT fencing.check_writers_transaction()"));
            assertThat(sqlState(t)).isEqualTo("FL013");
            c.rollback();
        }
    }

    @Test
    void checkFailsWithFL013AfterCommitAndChain() throws Exception {
        try (Connection c = app.connect("check-after-chain")) {
            c.setAutoCommit(false);
            query(c, BEGIN_WRITE);
            execute(c, "COMMIT AND CHAIN");
            Throwable t = catchThrowable(() -> execute(c, "SELECT fencing.check_writers_transaction()"));
            assertThat(sqlState(t)).isEqualTo("FL013");
            c.rollback();
        }
    }

    @Test
    void anotherSessionsBeginWriteDoesNotCountForThisTransaction() throws Exception {
        try (Connection writer = app.connect("check-other-writer");
                Connection other = app.connect("check-other")) {
            writer.setAutoCommit(false);
            other.setAutoCommit(false);
            query(writer, BEGIN_WRITE);
            query(other, "SELECT 1");
            Throwable t = catchThrowable(() -> execute(other, "SELECT fencing.check_writers_transaction()"));
            assertThat(sqlState(t)).isEqualTo("FL013");
            execute(writer, "SELECT fencing.check_writers_transaction()");
            writer.rollback();
            other.rollback();
        }
    }

    @Test
    void aLoginOutsideTheFencingRolesCannotCallEitherFunction() throws Exception {
        String outsider = "ws_outsider_" + ProcessHandle.current().pid();
        Fixtures.sql(db, "CREATE ROLE " + outsider + " LOGIN");
        try (Connection c = java.sql.DriverManager.getConnection(db.jdbcUrl(), outsider, "")) {
            assertThat(sqlState(catchThrowable(() -> query(c, BEGIN_WRITE)))).isEqualTo("42501");
            assertThat(sqlState(catchThrowable(() -> query(c, "SELECT fencing.check_writers_transaction()"))))
                    .isEqualTo("42501");
        } finally {
            Fixtures.sql(db, "DROP ROLE " + outsider);
        }
    }

    /** On a fresh connection: {@code setup} in autocommit, then {@code statement} as a transaction's first query. */
    private void assertRefused(String expected, String setup, String statement) throws SQLException {
        try (Connection c = app.connect("refused-" + expected)) {
            execute(c, setup);
            c.setAutoCommit(false);
            Throwable t = catchThrowable(() -> query(c, statement));
            assertThat(sqlState(t)).as("%s after %s", statement, setup).isEqualTo(expected);
            c.rollback();
            c.setAutoCommit(true);
            assertThat(query(c, "SELECT current_setting('fencing.term', true)")).isNotEqualTo("4");
        }
    }
}
