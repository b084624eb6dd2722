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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Any login may take any advisory lock (the functions are PUBLIC), the fence key (1178946115, lock_key) included:
 * exclusively or shared, on its session or in a transaction, held idle or handed around. The fence's safety does not
 * depend on who else holds the key (a transaction entered at a term holds it shared to its end; that is all the proof
 * uses), but the next term's advance needs it exclusively: it ends every backend holding it (pg_terminate_backend),
 * whoever that is, and takes it within advance_timeout, or fails with FL005 and changes nothing. These tests squat the
 * ways a login can and assert that the next term still advances, and that an advance's terminations never end
 * another advance in flight (concurrent advances of a resource queue on its mark row instead, which only the owner of
 * the fencing functions can lock).
 *
 * <p>Each test has its own resource and table (mark 5, held by leader a); advance_timeout is 1 s. Nothing sleeps: a
 * wait the fence should have bounded meets {@link AdversaryRole#QUERY_TIMEOUT_SECONDS} as a safety net, never as the
 * assertion.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FenceKeySquattersIT {
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

    private String note(String table, long id) {
        return Fixtures.text(db, "SELECT note FROM " + table + " WHERE id = " + id);
    }

    private static String takeKeyExclusively(String lockKey) {
        return "SELECT pg_try_advisory_lock(" + FENCE_LOCK_NAMESPACE + ", " + lockKey + ")";
    }

    /**
     * Opens a transaction on {@code c} (autocommit off) carrying {@code term} for {@code resource} and enters it there
     * with {@code fencing.enter} (advancing the mark when the term is newer); its writes then carry the term.
     */
    private static void enterTransaction(Connection c, String resource, long term, String leaderId)
            throws SQLException {
        c.setAutoCommit(false);
        execute(
                c,
                "SELECT set_config('fencing.term', '" + term + "', true),"
                        + " set_config('fencing.resource', '" + resource + "', true),"
                        + " set_config('fencing.leader_id', '" + leaderId + "', true),"
                        + " fencing.enter('" + resource + "', " + term + ", '" + leaderId + "')");
    }

    /** The next term's advance, as a raw {@code fencing.enter} with the lock_timeout the writer's pools send. */
    private Throwable advance(Connection next, String resource, long term) {
        return catchThrowable(() -> execute(
                next, "SET lock_timeout = '2s'", "SELECT fencing.enter('" + resource + "', " + term + ", 'b')"));
    }

    /**
     * An advance in flight is known by the lock on its mark row (FOR NO KEY UPDATE, held to the end of the advancing
     * transaction). Only the owner of the fencing functions can lock that row: a {@code fencing_app} login may only
     * read it (42501 for any row lock), a login outside the fencing roles cannot even name its table. So the most a
     * login can do to pose as an advance in flight is hold the fence key exclusively, and the next term's advance
     * ends it like any other holder.
     */
    @Test
    void aLoginPosingAsAnAdvanceInFlightCannotStopTheNextTermsAdvance() throws Exception {
        String table = scene.table("advmark_advance");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection poser = adversary.connect("poser");
                Connection squatter = scene.connectAsOutsider();
                Connection next = adversary.connect("leader-b")) {
            for (String mode : new String[] {"FOR KEY SHARE", "FOR SHARE", "FOR NO KEY UPDATE"}) {
                Throwable rowLock = catchThrowable(() -> AdversaryRole.inTransaction(
                        poser, "SELECT 1 FROM fencing.high_water_mark WHERE resource = '" + resource + "' " + mode));
                assertThat(sqlState(rowLock))
                        .as("a fencing_app login locking the mark row %s: %s", mode, rowLock)
                        .isEqualTo("42501");
            }
            assertThat(query(squatter, takeKeyExclusively(scene.lockKey(resource))))
                    .as("an outsider takes the fence key exclusively")
                    .isEqualTo("t");
            Throwable advance = advance(next, resource, 6);
            assertThat(advance)
                    .as(
                            "the next term's advance while an outsider holds the fence key exclusively"
                                    + " (SQLSTATE %s)",
                            sqlState(advance))
                    .isNull();
            assertThat(mark(db, resource)).isEqualTo(6);
            Throwable squatting = catchThrowable(() -> query(squatter, "SELECT 1"));
            assertThat(AdversaryRole.connectionLost(squatting))
                    .as("the squatter's session after the advance: %s", squatting)
                    .isTrue();
        }
    }

    /**
     * A squatter that keeps sending statements: pg_locks shows its session-level lock under a new transaction with
     * every statement. The advance ends whichever backend holds the key, whatever its transaction, and the new
     * leader's transactions then write.
     */
    @Test
    void aBusyLoginOutsideTheFencingRolesHoldingTheFenceKeyCannotStopTheNextTermsAdvance() throws Exception {
        String table = scene.table("busy_squatter");
        String resource = OutsiderScene.resourceOf(table);
        AtomicBoolean stop = new AtomicBoolean();
        try (Connection squatter = scene.connectAsOutsider();
                Connection next = adversary.connect("leader-b");
                HikariDataSource pool = scene.directPool("leader-b")) {
            assertThat(query(squatter, takeKeyExclusively(scene.lockKey(resource))))
                    .isEqualTo("t");
            CompletableFuture<Void> busy = CompletableFuture.runAsync(
                    () -> {
                        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(AdversaryRole.QUERY_TIMEOUT_SECONDS);
                        try (Statement st = squatter.createStatement()) {
                            for (int i = 0; i < 20_000 && !stop.get() && System.nanoTime() < until; i++) {
                                st.execute("SELECT 1");
                            }
                        } catch (SQLException e) {
                            // terminated by the advance
                        }
                    },
                    scene.background);
            Throwable advance = advance(next, resource, 6);
            stop.set(true);
            busy.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            assertThat(advance)
                    .as(
                            "the next term's advance while a busy outsider holds the fence key exclusively"
                                    + " (SQLSTATE %s)",
                            sqlState(advance))
                    .isNull();
            Throwable squatting = catchThrowable(() -> query(squatter, "SELECT 1"));
            assertThat(AdversaryRole.connectionLost(squatting))
                    .as("the squatter's session after the advance: %s", squatting)
                    .isTrue();
            FencedWriter leader = FencedWriter.create(pool, FencedWriterConfig.defaults());
            leader.run(
                    FencingToken.of(resource, 6, "b"),
                    ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'leader b at 6' WHERE id = 1"));
        }
        assertThat(mark(db, resource)).isEqualTo(6);
        assertThat(note(table, 1)).isEqualTo("leader b at 6");
    }

    /**
     * Squatters that hand the key on among themselves: each one queued for it gets it when the holder releases it, so
     * the key is rarely free, and each backend is on it only a few milliseconds of every 50 (the pause is the
     * attackers' pacing, not a wait of the test). The advance queues for the key too and ends whoever holds it at each
     * look: it must still get through within advance_timeout.
     */
    @Test
    void loginsOutsideTheFencingRolesHandingTheFenceKeyAroundCannotStopTheNextTermsAdvance() throws Exception {
        String table = scene.table("relay_squatters");
        String resource = OutsiderScene.resourceOf(table);
        String key = scene.lockKey(resource);
        AtomicBoolean stop = new AtomicBoolean();
        List<CompletableFuture<Void>> relay = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            Connection squatter = scene.connectAsOutsider();
            long offsetMillis = 3L * i;
            relay.add(CompletableFuture.runAsync(
                    () -> {
                        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(AdversaryRole.QUERY_TIMEOUT_SECONDS);
                        try (squatter;
                                Statement st = squatter.createStatement()) {
                            Thread.sleep(offsetMillis);
                            for (int n = 0; n < 5_000 && !stop.get() && System.nanoTime() < until; n++) {
                                st.execute("SELECT pg_advisory_lock(" + FENCE_LOCK_NAMESPACE + ", " + key + ")");
                                st.execute("SELECT pg_advisory_unlock(" + FENCE_LOCK_NAMESPACE + ", " + key + ")");
                                Thread.sleep(45);
                            }
                        } catch (SQLException e) {
                            // terminated by the advance
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    },
                    scene.background));
        }
        try (Connection next = adversary.connect("leader-b")) {
            Throwable advance = advance(next, resource, 6);
            assertThat(advance)
                    .as(
                            "the next term's advance while outsiders hand the fence key around (SQLSTATE %s)",
                            sqlState(advance))
                    .isNull();
            assertThat(mark(db, resource)).isEqualTo(6);
        } finally {
            stop.set(true);
            for (CompletableFuture<Void> f : relay) {
                f.get(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * A new leader's first transaction advances the mark and goes on with its writes, holding the key exclusively
     * (and its mark row) until it commits. The deposed leader, still writing, enters at its old term: the mark it
     * reads is still 5 (the advance is not committed), so it waits for the key in SHARE mode, bounded by its
     * lock_timeout, and ends nothing. The new leader's transaction commits.
     */
    @Test
    void theDeposedLeadersEnteringWaitsAndDoesNotEndTheNewLeadersFirstTransaction() throws Exception {
        String table = scene.table("advmark_handover");
        String resource = OutsiderScene.resourceOf(table);
        try (Connection newLeader = adversary.connect("leader-b");
                Connection oldLeader = adversary.connect("leader-a")) {
            enterTransaction(newLeader, resource, 6, "b");
            Throwable old = catchThrowable(() -> AdversaryRole.inTransaction(
                    oldLeader,
                    "SET LOCAL lock_timeout = '200ms'",
                    "SELECT fencing.enter('" + resource + "', 5, 'a')",
                    "UPDATE " + table + " SET note = 'leader a at 5' WHERE id = 2"));
            assertThat(sqlState(old))
                    .as("the deposed leader's entering while the new leader's advance is in flight:" + " %s", old)
                    .isEqualTo("55P03");
            Throwable commit = catchThrowable(() -> {
                execute(newLeader, "UPDATE " + table + " SET note = 'leader b at 6' WHERE id = 1");
                newLeader.commit();
            });
            assertThat(commit)
                    .as(
                            "the new leader's first transaction after the deposed leader entered (SQLSTATE %s)",
                            sqlState(commit))
                    .isNull();
        }
        assertThat(mark(db, resource)).isEqualTo(6);
        assertThat(note(table, 1)).isEqualTo("leader b at 6");
        assertThat(note(table, 2)).isEqualTo("initial");
    }

    /**
     * An advance first locks its mark row, under a lock_timeout it derives from advance_timeout rather than the
     * caller's (0, none, here as in psql and behind a transaction pooler). Whoever holds a conflicting lock on the row
     * or the table (a DBA's {@code SELECT ... FOR UPDATE}, {@code LOCK TABLE ... IN EXCLUSIVE MODE}) delays every
     * advance of the resource by at most advance_timeout: FL005, nothing changed.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"row", "table"})
    void anAdvanceWaitingForItsMarkRowFailsWithinAdvanceTimeout(String locked) throws Exception {
        String table = scene.table("advmark_locked_" + locked);
        String resource = OutsiderScene.resourceOf(table);
        try (Connection dba = Fixtures.connect(db);
                Connection next = adversary.connect("leader-b")) {
            execute(
                    dba,
                    "BEGIN",
                    locked.equals("row")
                            ? "SELECT 1 FROM fencing.high_water_mark WHERE resource = '" + resource + "' FOR UPDATE"
                            : "LOCK TABLE fencing.high_water_mark IN EXCLUSIVE MODE");
            Throwable advance = catchThrowable(
                    () -> execute(next, "SET lock_timeout = 0", "SELECT fencing.enter('" + resource + "', 6, 'b')"));
            execute(dba, "ROLLBACK");
            assertThat(sqlState(advance))
                    .as(
                            "the advance's outcome while its mark %s is locked (1 s advance_timeout;"
                                    + " 57014 is the test's %s s safety net): %s",
                            locked, AdversaryRole.QUERY_TIMEOUT_SECONDS, advance)
                    .isEqualTo("FL005");
            assertThat(mark(db, resource)).as("nothing changed").isEqualTo(5);
        }
    }
}
