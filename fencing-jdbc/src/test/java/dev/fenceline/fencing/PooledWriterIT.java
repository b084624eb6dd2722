package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.AMOUNT;
import static dev.fenceline.fencing.Fixtures.ID;
import static dev.fenceline.fencing.Fixtures.PAYMENT;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.testkit.PgBouncer;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The fence through a real PgBouncer in transaction mode with a pool of 2 server sessions shared by every client:
 * the writer (on its defaults: each transaction carries its own term, nothing is entered beyond it), raw SQL, and
 * what is (not) left on the pooled server sessions.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PooledWriterIT {
    private static final String RESOURCE = "pooled";

    private TestDatabase db;
    private PgBouncer bouncer;
    private HikariDataSource oldLeaderPool;
    private HikariDataSource newLeaderPool;
    private FencedWriter oldLeader;
    private FencedWriter newLeader;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        Fixtures.createProtectedPaymentTable(db, RESOURCE);
        bouncer = PgBouncer.start(
                db.server(),
                PgBouncer.Options.defaults().poolMode("transaction").defaultPoolSize(2));
        oldLeaderPool = pool("old-leader");
        newLeaderPool = pool("new-leader");
        FencedWriterConfig config = FencedWriterConfig.builder()
                .lockTimeout(Duration.ofMillis(1500))
                .idleInTransactionSessionTimeout(Duration.ofSeconds(20))
                .build();
        oldLeader = FencedWriter.create(oldLeaderPool, config);
        newLeader = FencedWriter.create(newLeaderPool, config);
    }

    private HikariDataSource pool(String name) {
        return Databases.dataSource(DatabaseConfig.builder(bouncer.jdbcUrl(db.name()))
                .username(bouncer.user())
                .password(bouncer.password())
                .maximumPoolSize(3)
                .applicationName(name)
                .poolName(name)
                .build());
    }

    @AfterAll
    void tearDown() {
        if (oldLeaderPool != null) {
            oldLeaderPool.close();
        }
        if (newLeaderPool != null) {
            newLeaderPool.close();
        }
        if (bouncer != null) {
            bouncer.close();
        }
    }

    private static FencingToken token(long term, String leader) {
        return FencingToken.of(RESOURCE, term, leader);
    }

    private long mark() {
        return count(db, "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = '" + RESOURCE + "'");
    }

    @Test
    void deposedLeadersTransactionThroughTheTransactionPoolerIsRejectedAndAudited() {
        long t = mark() + 1;
        oldLeader.transaction(
                token(t, "a"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 100L).set(AMOUNT, 1L).execute());
        newLeader.transaction(
                token(t + 1, "b"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 101L).set(AMOUNT, 1L).execute());
        // The old leader's next transactions land on server sessions the new leader used: each is decided on its own.
        for (int i = 0; i < 4; i++) {
            long id = 110 + i;
            assertThatThrownBy(() -> oldLeader.transaction(
                            token(t, "a"),
                            WriteDescription.of("public.payment", "INSERT", "late-" + id, null),
                            ctx -> ctx.insertInto(PAYMENT)
                                    .set(ID, id)
                                    .set(AMOUNT, 1L)
                                    .execute()))
                    .isInstanceOfSatisfying(StaleTermException.class, e -> {
                        assertThat(e.highestAccepted()).isEqualTo(t + 1);
                        assertThat(e.audited()).isTrue();
                    });
        }
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id BETWEEN 110 AND 113"))
                .isZero();
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + RESOURCE + "'"
                                + " AND offered_term = " + t + " AND business_key LIKE 'late-%'"))
                .isEqualTo(4);
    }

    @Test
    void leaderPausedInsideItsTransactionCannotCommitAfterTheNextTermWroteThroughThePooler() throws Exception {
        long t = mark() + 1;
        oldLeader.transaction(
                token(t, "a"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 200L).set(AMOUNT, 1L).execute());
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        CompletableFuture<Integer> paused =
                CompletableFuture.supplyAsync(() -> oldLeader.transaction(token(t, "a"), ctx -> {
                    int n = ctx.update(PAYMENT)
                            .set(AMOUNT, 99L)
                            .where(ID.eq(200L))
                            .execute();
                    inside.countDown();
                    try {
                        resume.await(60, TimeUnit.SECONDS); // "paused" after its write, before its commit
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return n;
                }));
        assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
        // The new leader advances: the paused transaction holds the fence's transaction lock, so its server backend
        // is terminated before the mark moves.
        newLeader.transaction(
                token(t + 1, "b"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 201L).set(AMOUNT, 1L).execute());
        resume.countDown();
        // The pooler reports the lost server session at COMMIT, so the writer cannot tell "rejected" from "lost
        // while committing": either way it must not claim success, and the database decides.
        assertThatThrownBy(() -> paused.get(60, TimeUnit.SECONDS))
                .cause()
                .isInstanceOfAny(StaleTermException.class, CommitOutcomeUnknownException.class);
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 200")).isEqualTo(1);
        assertThat(count(
                        db,
                        "SELECT terminated_sessions FROM fencing.term_history WHERE resource = '" + RESOURCE
                                + "' AND term = " + (t + 1)))
                .isPositive();
    }

    @Test
    void rawStaleWriteThroughThePoolerIsRejectedAndAuditedAndARawTermlessWriteToo() throws Exception {
        long t = mark() + 2; // the stale term t - 1 is a term (>= 1) whichever test ran first
        newLeader.transaction(
                token(t, "c"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 300L).set(AMOUNT, 1L).execute());
        try (Connection c = bouncer.connection(db.name())) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("SET LOCAL fencing.term = '" + (t - 1) + "'");
                assertThatThrownBy(() -> s.execute("UPDATE payment SET amount = 7 WHERE id = 300"))
                        .isInstanceOfSatisfying(
                                SQLException.class,
                                e -> assertThat(e.getSQLState()).isEqualTo("FL001"));
            }
            c.rollback();
            try (Statement s = c.createStatement()) {
                assertThatThrownBy(() -> s.execute("UPDATE payment SET amount = 8 WHERE id = 300"))
                        .isInstanceOfSatisfying(
                                SQLException.class,
                                e -> assertThat(e.getSQLState()).isEqualTo("FL002"));
            }
            c.rollback();
        }
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 300")).isEqualTo(1);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + RESOURCE + "'"
                                + " AND source = 'trigger' AND offered_term = " + (t - 1)
                                + " AND reason = 'stale_term'"))
                .isEqualTo(1);
    }

    @Test
    void writerTimeoutsTakeEffectInEveryTransactionThroughThePooler() {
        long t = mark() + 1;
        String[] seen = newLeader.transaction(
                token(t, "d"),
                ctx -> ctx.dsl()
                        .fetchOne(
                                "SELECT current_setting('lock_timeout'), current_setting('idle_in_transaction_session_timeout')")
                        .into(String[].class));
        assertThat(seen).containsExactly("1500ms", "20s");
    }

    @Test
    void noFenceLockAndNoEnteredStateIsLeftOnPooledServerSessions() throws Exception {
        long t = mark() + 1;
        for (int i = 0; i < 6; i++) {
            long id = 400 + i;
            newLeader.transaction(
                    token(t, "e"),
                    ctx -> ctx.insertInto(PAYMENT).set(ID, id).set(AMOUNT, 1L).execute());
        }
        assertThat(count(db, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 1178946115"))
                .isZero();
        assertThat(count(db, "SELECT count(*) FROM fencing.entered_transactions WHERE resource = '" + RESOURCE + "'"))
                .isZero();
        // A term-less write on those very server sessions is still rejected: nothing is entered there.
        try (Connection c = bouncer.connection(db.name());
                Statement s = c.createStatement()) {
            for (int i = 0; i < 4; i++) {
                assertThatThrownBy(() -> s.execute("DELETE FROM payment WHERE id = 400"))
                        .isInstanceOfSatisfying(
                                SQLException.class,
                                e -> assertThat(e.getSQLState()).isEqualTo("FL002"));
            }
        }
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 400")).isEqualTo(1);
    }
}
