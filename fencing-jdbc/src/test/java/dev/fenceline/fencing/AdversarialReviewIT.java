package dev.fenceline.fencing;

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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
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
 * <p>Every test keeps a session "entered" at term 5 through something other than forging the setting by hand (a
 * declared non-goal), lets an advance to term 6 commit, and then asserts that the term-5 session can no longer write.
 * Nothing sleeps: the order of events is forced by running the sessions' statements one after the other, and the
 * one concurrent step waits (bounded) for the advance to be observed waiting on a lock.
 *
 * <p>Each test has its own resource and table.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdversarialReviewIT {
    private TestDatabase db;
    private AdversaryRole adversary;
    private ExecutorService background;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        // Long enough that the concurrent test can see the advance waiting and act before it gives up.
        Fixtures.sql(db, "UPDATE fencing.settings SET value = '10s' WHERE name = 'advance_timeout'");
        adversary = AdversaryRole.create(db);
        background = Executors.newSingleThreadExecutor();
    }

    @AfterEach
    void rollBackPreparedTransactions() {
        AdversaryRole.rollbackPreparedTransactions(db);
    }

    @AfterAll
    void tearDown() throws InterruptedException {
        if (background != null) {
            background.shutdownNow();
            background.awaitTermination(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
        if (adversary != null) {
            adversary.close();
        }
    }

    private String note(String table, long id) {
        return Fixtures.text(db, "SELECT note FROM " + table + " WHERE id = " + id);
    }

    private String terminatedSessions(String resource, long term) {
        return Fixtures.text(db, "SELECT string_agg(terminated_sessions::text, ',') FROM fencing.term_history"
                + " WHERE resource = '" + resource + "' AND term = " + term);
    }

    /** The term-5 session's write after the advance to 6 committed must fail, and row 1 must stay as it was. */
    private void assertTermFiveWriteRefusedAfterTheAdvance(Connection a, String resource, String table, String how) {
        assertThat(mark(db, resource)).as("mark of %s after the advance", resource).isEqualTo(6);
        Throwable late = catchThrowable(() -> inTransaction(a,
                "UPDATE " + table + " SET note = 'term 5 after 6', fencing_term = 5 WHERE id = 1"));
        assertThat(late)
                .as("a write of the session entered at term 5 (%s) after the advance of %s to 6 committed;"
                        + " terminated_sessions of that advance: %s", how, resource, terminatedSessions(resource, 6))
                .isNotNull();
        assertThat(note(table, 1)).as("row 1 of %s after the term-5 write was refused", table).isEqualTo("initial");
    }

    // ---- two-phase commit: the registration rolled back, the setting kept --------------------------------------

    /**
     * PREPARE TRANSACTION keeps the session-level settings the transaction made (like a commit), but ROLLBACK PREPARED
     * undoes its rows: an entering that could be prepared would leave fencing.entered_<key> set with no registration
     * (and, after a pool's reset released the lock, nothing for the advance to terminate). An XA transaction manager
     * that rolls back a prepared branch in which the connection entered does exactly this; so a session entering
     * must not be preparable at all.
     */
    @Test
    void sessionEnteringCannotBePreparedSoNoEnteredSettingOutlivesItsRegistration() throws Exception {
        adversary.protectedTable("xa_enter", "xa-enter", 5, "a");
        try (Connection a = adversary.connect("leader-a"); Connection b = adversary.connect("leader-b")) {
            // Even with the session lock released first (a transaction-level lock would not help: it could be the
            // only lock left), PostgreSQL refuses the PREPARE: the entering touched a temporary table.
            execute(a, "BEGIN", "SELECT fencing.enter('xa-enter', 5, 'a')", "SELECT pg_advisory_unlock_all()");
            Throwable prepare = catchThrowable(() -> execute(a, "PREPARE TRANSACTION 'xa-enter-branch'"));
            assertThat(sqlState(prepare)).as("PREPARE of a session entering: %s", prepare).isEqualTo("0A000");
            execute(a, "ROLLBACK", "SELECT pg_advisory_unlock_all()");
            assertThat(query(b, "SELECT fencing.enter('xa-enter', 6, 'b')")).isEqualTo("6");
            assertTermFiveWriteRefusedAfterTheAdvance(a, "xa-enter", "xa_enter",
                    "its entering transaction refused to prepare, fence lock released");
        }
        assertThat(count(db, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'xa-enter-branch'")).isZero();
    }

    /**
     * The session entering touches the session's temporary table {@code fencing_session_entering} from a function that
     * runs as the fencing schema's owner. The application role owns its temporary schema: a view (or a table with
     * row-level security, rules or inheritance children) of its own by that name would run its code with the owner's
     * rights, e.g. lowering the mark. Entering must refuse such a relation and run nothing of it.
     */
    @Test
    void aTemporaryRelationOfTheApplicationRoleNamedLikeTheEnteringTableRunsNothingAsTheOwner() throws Exception {
        adversary.protectedTable("temp_swap", "temp-swap", 5, "a");
        try (Connection a = adversary.connect("leader-a")) {
            execute(a, "CREATE FUNCTION pg_temp.lower_the_mark() RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN"
                    + " UPDATE fencing.high_water_mark SET highest_accepted = 2 WHERE resource = 'temp-swap';"
                    + " RETURN true; END $f$",
                    "CREATE TEMPORARY VIEW fencing_session_entering AS SELECT 'x'::text AS resource"
                    + " WHERE pg_temp.lower_the_mark()",
                    "GRANT SELECT ON fencing_session_entering TO PUBLIC");
            Throwable entering = catchThrowable(() -> execute(a, "SELECT fencing.enter('temp-swap', 6, 'a')"));
            assertThat(mark(db, "temp-swap")).as("the mark after entering (%s)", entering).isEqualTo(5);
            assertThat(entering).as("entering with a view in place of the entering table").isNotNull();
        }
    }

    // ---- the advancing backend itself keeps its older session-scoped entering ---------------------------------

    /**
     * A backend entered for its session at 5 advances the resource to 6 with transaction scope (enter_transaction, or
     * a raw write with SET LOCAL fencing.term / fencing.resource). The advance excludes its own pid from termination
     * and from the registry cleanup, and its SET LOCAL of fencing.entered_<key> = 6 ends with the transaction, which
     * brings back the session value 5. From then on the backend passes the guard's fast path as "entered at 5", even
     * with fencing.term = 5 set explicitly, while the mark is 6.
     */
    @Test
    void backendEnteredForItsSessionAtTheOlderTermCannotWriteAtThatTermAfterItsOwnEnterTransactionAdvance()
            throws Exception {
        adversary.protectedTable("own_xact_advance", "own-xact-advance", 5, "a");
        try (Connection a = adversary.connect("leader-a")) {
            execute(a, "SELECT fencing.enter('own-xact-advance', 5, 'a')");
            inTransaction(a, "SELECT fencing.enter_transaction('own-xact-advance', 6, 'b')");
            assertThat(mark(db, "own-xact-advance")).isEqualTo(6);
            Throwable late = catchThrowable(() -> inTransaction(a, "SET LOCAL fencing.term = '5'",
                    "UPDATE own_xact_advance SET note = 'term 5 after 6', fencing_term = 5 WHERE id = 1"));
            assertThat(late)
                    .as("a write carrying fencing.term = 5 after the same backend advanced the resource to 6 (session"
                            + " setting after the advance: %s)", query(a, "SELECT current_setting('fencing.entered_'"
                            + " || lock_key, true) FROM fencing.high_water_mark WHERE resource = 'own-xact-advance'"))
                    .isNotNull();
        }
        assertThat(note("own_xact_advance", 1)).isEqualTo("initial");
    }

    @Test
    void backendEnteredForItsSessionAtTheOlderTermCannotWriteWithoutATermAfterItsOwnRawWriteAdvance()
            throws Exception {
        adversary.protectedTable("own_raw_advance", "own-raw-advance", 5, "a");
        try (Connection a = adversary.connect("leader-a")) {
            execute(a, "SELECT fencing.enter('own-raw-advance', 5, 'a')");
            inTransaction(a, "SET LOCAL fencing.resource = 'own-raw-advance'", "SET LOCAL fencing.term = '6'",
                    "UPDATE own_raw_advance SET note = 'term 6', fencing_term = 6 WHERE id = 2");
            assertThat(mark(db, "own-raw-advance")).isEqualTo(6);
            assertTermFiveWriteRefusedAfterTheAdvance(a, "own-raw-advance", "own_raw_advance",
                    "it advanced the resource itself with a raw SET LOCAL fencing.term = 6 write");
        }
    }

    // ---- REPEATABLE READ advance: the registry read from a snapshot older than the wait -------------------------

    /**
     * The advance waits (step 2, FOR NO KEY UPDATE) for entering transactions still open, then reads the registry to
     * find whom to terminate. Under REPEATABLE READ (e.g. default_transaction_isolation of the pool or database) that
     * read uses the snapshot taken before the wait, so a registration committed during the wait is invisible. A
     * session that entered at 5 and released its fence lock in the still-open entering transaction survives.
     */
    @Test
    void advanceUnderRepeatableReadDeposesASessionWhoseEnteringTransactionCommittedWhileTheAdvanceWaited()
            throws Exception {
        adversary.protectedTable("rr_advance", "rr-advance", 5, "a");
        try (Connection a = adversary.connect("leader-a"); Connection b = adversary.connect("leader-b")) {
            long bPid = backendPid(b);
            execute(a, "BEGIN", "SELECT fencing.enter('rr-advance', 5, 'a')", "SELECT pg_advisory_unlock_all()");
            execute(b, "SET default_transaction_isolation = 'repeatable read'");
            Future<String> advance = background.submit(() -> query(b, "SELECT fencing.enter('rr-advance', 6, 'b')"));
            await("the advance of rr-advance to 6 waiting for the open entering transaction's row lock")
                    .atMost(Duration.ofSeconds(8)).pollInterval(Duration.ofMillis(20))
                    .until(() -> advance.isDone() || count(db, "SELECT count(*) FROM pg_stat_activity WHERE pid = "
                            + bPid + " AND wait_event_type = 'Lock'") == 1);
            execute(a, "COMMIT");
            String advanced;
            try {
                advanced = advance.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            } catch (ExecutionException refused) {
                // Refusing the advance (nothing changed) keeps the property; only an accepted advance is attacked.
                assertThat(sqlState(refused)).as("refused advance: %s", refused.getCause()).isIn("FL005", "40001", "FL011");
                assertThat(mark(db, "rr-advance")).isEqualTo(5);
                return;
            }
            assertThat(advanced).isEqualTo("6");
            assertTermFiveWriteRefusedAfterTheAdvance(a, "rr-advance", "rr_advance",
                    "registered in a transaction that committed while a REPEATABLE READ advance waited for it");
        }
    }

    // ---- pg_stat_activity read earlier in the advancing transaction --------------------------------------------

    /**
     * pg_stat_activity is a per-transaction snapshot once read. The advance finds live registered backends by joining
     * the registry with pg_stat_activity before its first pg_stat_clear_snapshot(), so when the advancing
     * transaction read pg_stat_activity earlier (here: fencing.enter() of another resource, whose registration reads
     * it), a backend that connected and entered after that read is not terminated.
     */
    @Test
    void advanceDeposesASessionThatConnectedAfterItsTransactionFirstReadPgStatActivity() throws Exception {
        adversary.protectedTable("stats_late", "stats-late", 5, "a");
        adversary.protectedTable("stats_other", "stats-other", 1, "b");
        try (Connection b = adversary.connect("leader-b")) {
            execute(b, "BEGIN", "SELECT fencing.enter('stats-other', 1, 'b')");
            try (Connection a = adversary.connect("leader-a")) {
                execute(a, "SELECT fencing.enter('stats-late', 5, 'a')", "SELECT pg_advisory_unlock_all()");
                execute(b, "SELECT fencing.enter('stats-late', 6, 'b')", "COMMIT");
                assertTermFiveWriteRefusedAfterTheAdvance(a, "stats-late", "stats_late",
                        "connected after the advancing transaction first read pg_stat_activity");
            }
        }
    }
}
