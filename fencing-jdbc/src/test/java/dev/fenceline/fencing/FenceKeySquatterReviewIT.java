package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.FENCE_LOCK_NAMESPACE;
import static dev.fenceline.fencing.AdversaryRole.execute;
import static dev.fenceline.fencing.AdversaryRole.mark;
import static dev.fenceline.fencing.AdversaryRole.query;
import static dev.fenceline.fencing.AdversaryRole.sqlState;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The fence-key squatter defence tells an advance in flight from a squatter that holds or awaits a resource's fence
 * key exclusively, and terminates the squatter. These tests pose as an advance the ways any login can, and take the
 * defence's side effects on real advances: the next term must still advance, the current leader must still commit,
 * and no backend that is advancing may be terminated.
 *
 * <p>Schema {@code fencing} is usable by PUBLIC (the guard needs it), and PostgreSQL locks a table named in a
 * statement while it parses it, before it checks any table privilege: {@code SELECT ... FOR SHARE} is parsed with a
 * ROW SHARE lock on the table. {@code PREPARE} parses and never executes, so no privilege check ever fails, and the
 * lock stays until the transaction ends: a relation lock on the table that marks advances cannot mark an advance, and
 * that table lives in a schema only the owner may use ({@code fencing_private}), so no login can even name it.
 *
 * <p>Each test has its own resource and table (mark 5, held by leader a). Nothing sleeps: a wait the fence should
 * have bounded meets {@link AdversaryRole#QUERY_TIMEOUT_SECONDS} as a safety net, never as the assertion.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FenceKeySquatterReviewIT {
    /** A statement any login may prepare: it locks fencing_private.advancing in ROW SHARE mode and is never executed. */
    private static final String PREPARE_ADVANCING_MARK =
            "PREPARE advancing_mark AS SELECT 1 FROM fencing_private.advancing FOR SHARE";

    private TestDatabase db;
    private AdversaryRole adversary;
    private OutsiderScene scene;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        scene = OutsiderScene.create(db, "fence_key_outsider_");
        adversary = scene.adversary;
    }

    @AfterAll
    void tearDown() throws InterruptedException {
        if (scene != null) {
            scene.close();
        }
    }

    /**
     * Makes {@code squatter} look like an advance in flight: an open transaction holding a ROW SHARE lock on
     * fencing_private.advancing (from a prepared, never executed statement, when PostgreSQL lets it) and the resource's fence
     * key exclusively.
     */
    private void squatAsAnAdvance(Connection squatter, String resource) throws SQLException {
        execute(squatter, "BEGIN");
        if (catchThrowable(() -> execute(squatter, PREPARE_ADVANCING_MARK)) != null) {
            execute(squatter, "ROLLBACK", "BEGIN");   // refused: the outsider squats without the mark
        }
        assertThat(query(squatter, "SELECT pg_try_advisory_lock(" + FENCE_LOCK_NAMESPACE + ", " + scene.lockKey(resource)
                + ")")).as("an outsider takes the fence lock exclusively").isEqualTo("t");
    }

    @Test
    void aLoginOutsideTheFencingRolesPosingAsAnAdvanceInFlightCannotStopTheNextTermsAdvance() throws Exception {
        String table = scene.table("advmark_advance");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection squatter = scene.connectAsOutsider(); Connection next = adversary.connect("leader-b")) {
            squatAsAnAdvance(squatter, resource);
            // lock_timeout as the writer's pools send it: entering first takes the key in SHARE mode.
            Throwable advance = catchThrowable(() -> execute(next, "SET lock_timeout = '2s'",
                    "SELECT fencing.enter('" + resource + "', 6, 'b')"));
            assertThat(advance).as("the next term's advance while an outsider poses as an advance in flight"
                    + " (SQLSTATE %s)", sqlState(advance)).isNull();
            assertThat(mark(db, resource)).isEqualTo(6);
        }
    }

    @Test
    void aLoginOutsideTheFencingRolesPosingAsAnAdvanceInFlightCannotBlockTheCurrentLeadersTransactions()
            throws Exception {
        String table = scene.table("advmark_leader");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection squatter = scene.connectAsOutsider();
             HikariDataSource pool = scene.directPool("leader-a")) {
            squatAsAnAdvance(squatter, resource);
            FencedWriter leader = FencedWriter.create(pool, FencedWriterConfig.builder()
                    .lockTimeout(Duration.ofMillis(500)).build());
            Throwable write = catchThrowable(() -> leader.run(FencingToken.of(resource, 5, "a"),
                    ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'leader a at 5' WHERE id = 1")));
            assertThat(write).as("the current leader's transaction while an outsider poses as an advance in flight"
                    + " (SQLSTATE %s)", sqlState(write)).isNull();
        }
        assertThat(Fixtures.text(db, "SELECT note FROM " + table + " WHERE id = 1")).isEqualTo("leader a at 5");
    }

    /**
     * A squatter that keeps sending statements: pg_locks shows its session-level lock under a new transaction with
     * every statement, so recognising it by transaction would never see the same one twice.
     */
    @Test
    void aBusyLoginOutsideTheFencingRolesHoldingTheFenceLockCannotBlockTheCurrentLeadersTransactions()
            throws Exception {
        String table = scene.table("busy_squatter");
        String resource = OutsiderScene.resourceOf(table);
        AtomicBoolean stop = new AtomicBoolean();
        try (Connection squatter = scene.connectAsOutsider();
             HikariDataSource pool = scene.directPool("leader-a")) {
            assertThat(query(squatter, "SELECT pg_try_advisory_lock(" + FENCE_LOCK_NAMESPACE + ", "
                    + scene.lockKey(resource) + ")")).isEqualTo("t");
            CompletableFuture<Void> busy = CompletableFuture.runAsync(() -> {
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(AdversaryRole.QUERY_TIMEOUT_SECONDS);
                try (Statement st = squatter.createStatement()) {
                    for (int i = 0; i < 20_000 && !stop.get() && System.nanoTime() < until; i++) {
                        st.execute("SELECT 1");
                    }
                } catch (SQLException e) {
                    // terminated: the defence worked
                }
            }, scene.background);
            FencedWriter leader = FencedWriter.create(pool, FencedWriterConfig.builder()
                    .lockTimeout(Duration.ofMillis(500)).build());
            Throwable write = catchThrowable(() -> leader.run(FencingToken.of(resource, 5, "a"),
                    ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'leader a at 5' WHERE id = 1")));
            stop.set(true);
            busy.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            assertThat(write).as("the current leader's transaction while a busy outsider holds the fence lock"
                    + " exclusively (SQLSTATE %s)", sqlState(write)).isNull();
        }
        assertThat(Fixtures.text(db, "SELECT note FROM " + table + " WHERE id = 1")).isEqualTo("leader a at 5");
    }

    /**
     * Squatters that hand the key on among themselves: each one queued for it gets it when the holder releases it, so
     * the key is never free, and each backend is on the key only a few milliseconds of every 50 (the pause is the
     * attackers' pacing, not a wait of the test): looking twice for the same backend would never find one. The advance
     * must still get through.
     */
    @Test
    void loginsOutsideTheFencingRolesHandingTheFenceLockAroundCannotStopTheNextTermsAdvance() throws Exception {
        String table = scene.table("relay_squatters");
        String resource = OutsiderScene.resourceOf(table);
        String key = scene.lockKey(resource);
        AtomicBoolean stop = new AtomicBoolean();
        List<CompletableFuture<Void>> relay = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            Connection squatter = scene.connectAsOutsider();
            long offsetMillis = 3L * i;
            relay.add(CompletableFuture.runAsync(() -> {
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(AdversaryRole.QUERY_TIMEOUT_SECONDS);
                try (squatter; Statement st = squatter.createStatement()) {
                    Thread.sleep(offsetMillis);
                    for (int n = 0; n < 5_000 && !stop.get() && System.nanoTime() < until; n++) {
                        st.execute("SELECT pg_advisory_lock(" + FENCE_LOCK_NAMESPACE + ", " + key + ")");
                        st.execute("SELECT pg_advisory_unlock(" + FENCE_LOCK_NAMESPACE + ", " + key + ")");
                        Thread.sleep(45);
                    }
                } catch (SQLException e) {
                    // terminated: the defence worked
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, scene.background));
        }
        try (Connection next = adversary.connect("leader-b")) {
            Throwable advance = catchThrowable(() -> execute(next, "SET lock_timeout = '2s'",
                    "SELECT fencing.enter('" + resource + "', 6, 'b')"));
            assertThat(advance).as("the next term's advance while outsiders hand the fence lock around (SQLSTATE %s)",
                    sqlState(advance)).isNull();
            assertThat(mark(db, resource)).isEqualTo(6);
        } finally {
            stop.set(true);
            for (CompletableFuture<Void> f : relay) {
                f.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * PostgreSQL queues CREATE RULE's ACCESS EXCLUSIVE lock on the named table before it checks ownership: on the
     * table that marks advances, that would stall every advance. Naming it needs USAGE on its schema, checked first.
     */
    @Test
    void aLoginOutsideTheFencingRolesCannotQueueALockOnTheTableThatMarksAdvances() throws Exception {
        try (Connection outsiderSession = scene.connectAsOutsider()) {
            Throwable rule = catchThrowable(() -> execute(outsiderSession, "BEGIN",
                    "CREATE RULE squat AS ON INSERT TO fencing_private.advancing DO INSTEAD NOTHING"));
            assertThat(sqlState(rule)).isEqualTo("42501");
            execute(outsiderSession, "ROLLBACK");
            Throwable prepare = catchThrowable(() -> execute(outsiderSession, "BEGIN", PREPARE_ADVANCING_MARK));
            assertThat(sqlState(prepare)).isEqualTo("42501");
        }
    }

    /**
     * {@code clear_fence_squatters} runs whenever an entering finds the key taken, and every 5 ms in a concurrent
     * advance's loop: here it runs back to back (as the owner: its callers are SECURITY DEFINER) while one leader
     * advances term after term. It must never take that leader, holding the key between its mark and its commit, for a
     * squatter (a mark read from pg_locks races the advance's start and commit; a row's xmax written by the advance's
     * subtransaction is not an id pg_locks shows for the backend; a row the advance inserted is not visible yet).
     */
    @Test
    void clearingFenceSquattersNeverTerminatesABackendThatIsAdvancing() throws Exception {
        String table = scene.table("advmark_clear");
        String resource = OutsiderScene.resourceOf(table);
        String key = scene.lockKey(resource);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong cleared = new AtomicLong();
        CompletableFuture<Void> clearing = CompletableFuture.runAsync(() -> {
            try (Connection owner = Fixtures.connect(db); Statement s = owner.createStatement()) {
                while (!stop.get()) {
                    s.execute("SELECT fencing.clear_fence_squatters(" + key + ")");
                    cleared.incrementAndGet();
                }
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }, scene.background);
        int advances = 300;
        int advanced = 0;
        Throwable lost = null;
        try (Connection leader = adversary.connect("leader-b")) {
            execute(leader, "SET lock_timeout = '2s'");
            for (long term = 6; term < 6 + advances && lost == null; term++) {
                long t = term;
                lost = catchThrowable(() -> execute(leader, "SELECT fencing.enter('" + resource + "', " + t + ", 'b')"));
                if (lost == null) {
                    advanced++;
                }
            }
        } finally {
            stop.set(true);
            clearing.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
        assertThat(lost).as("the leader's advance %s of %s, with %s clearings run alongside (SQLSTATE %s)",
                advanced + 1, advances, cleared.get(), sqlState(lost)).isNull();
        assertThat(mark(db, resource)).isEqualTo(5 + advances);
    }

    /**
     * A new leader's first transaction advances the mark and goes on with its writes, holding the key exclusively
     * until it commits. The deposed leader, still writing, enters at its old term, finds the key taken and clears
     * squatters: the new leader's transaction, an advance in flight, must not be taken for one (its row of
     * fencing_private.advancing is locked by the advance's subtransaction, whose id is not the one read for the backend).
     */
    @Test
    void theDeposedLeadersEnteringDoesNotTerminateTheNewLeadersFirstTransaction() throws Exception {
        String table = scene.table("advmark_handover");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection newLeader = adversary.connect("leader-b"); Connection oldLeader = adversary.connect("leader-a")) {
            newLeader.setAutoCommit(false);
            execute(newLeader, "SELECT fencing.enter_transaction('" + resource + "', 6, 'b')");
            Throwable old = catchThrowable(() -> AdversaryRole.inTransaction(oldLeader, "SET LOCAL lock_timeout = '200ms'",
                    "SELECT fencing.enter_transaction('" + resource + "', 5, 'a')"));
            Throwable commit = catchThrowable(() -> {
                execute(newLeader, "UPDATE " + table + " SET note = 'leader b at 6' WHERE id = 1");
                newLeader.commit();
            });
            assertThat(commit).as("the new leader's first transaction after the deposed leader entered (its outcome:"
                    + " SQLSTATE %s; the new leader's: SQLSTATE %s)", sqlState(old), sqlState(commit)).isNull();
        }
        assertThat(mark(db, resource)).isEqualTo(6);
        assertThat(Fixtures.text(db, "SELECT note FROM " + table + " WHERE id = 1")).isEqualTo("leader b at 6");
    }

    /**
     * An advance first locks fencing_private.advancing, outside the loop bounded by advance_timeout and under the caller's
     * lock_timeout (0, none, in psql and behind a transaction pooler). Whoever holds a conflicting lock on it (a DBA's
     * {@code VACUUM FULL}, {@code ALTER TABLE} or {@code LOCK TABLE}, or one of those queued behind a login's
     * parse-time lock) makes every advance wait without a bound. It must fail with FL005 within advance_timeout.
     */
    @Test
    void anAdvanceWaitingForFencingAdvancingFailsWithinAdvanceTimeout() throws Exception {
        String table = scene.table("advmark_locked");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection dba = Fixtures.connect(db); Connection next = adversary.connect("leader-b")) {
            execute(dba, "BEGIN", "LOCK TABLE fencing_private.advancing IN ACCESS EXCLUSIVE MODE");
            Throwable advance = catchThrowable(() -> execute(next, "SET lock_timeout = 0",
                    "SELECT fencing.enter('" + resource + "', 6, 'b')"));
            execute(dba, "ROLLBACK");
            assertThat(sqlState(advance)).as("the advance's outcome while fencing_private.advancing is locked (1 s"
                    + " advance_timeout; 57014 is the test's %s s safety net): %s",
                    AdversaryRole.QUERY_TIMEOUT_SECONDS, advance).isEqualTo("FL005");
            assertThat(mark(db, resource)).as("nothing changed").isEqualTo(5);
        }
    }}
