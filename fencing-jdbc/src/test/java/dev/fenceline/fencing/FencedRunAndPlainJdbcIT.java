package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.AMOUNT;
import static dev.fenceline.fencing.Fixtures.ID;
import static dev.fenceline.fencing.Fixtures.PAYMENT;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code FencedWriter.run} (work without a result) and plain JDBC through {@code FencedContext.connection()}. */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FencedRunAndPlainJdbcIT {
    private static final String INSERT_STAMPED =
            "INSERT INTO public.payment (id, amount, fencing_term) VALUES (?, ?, ?)";

    private TestDatabase db;
    private HikariDataSource oldLeaderPool;
    private HikariDataSource newLeaderPool;
    private FencedWriter oldLeader;
    private FencedWriter newLeader;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        Fixtures.createProtectedPaymentTable(db, "settlement");
        oldLeaderPool = Fixtures.pool(db, 2, "old-leader");
        newLeaderPool = Fixtures.pool(db, 2, "new-leader");
        oldLeader = FencedWriter.create(oldLeaderPool, FencedWriterConfig.defaults());
        newLeader = FencedWriter.create(newLeaderPool, FencedWriterConfig.defaults());
    }

    @AfterAll
    void tearDown() {
        oldLeaderPool.close();
        newLeaderPool.close();
    }

    private static FencingToken token(long term, String leader) {
        return FencingToken.of("settlement", term, leader);
    }

    private long nextTerm() {
        return newLeader.highestAccepted("settlement") + 1;
    }

    /** Plain JDBC, stamping the row with the transaction's term as the documentation asks. */
    private static void insertStamped(FencedContext ctx, long id, long amount) throws SQLException {
        try (PreparedStatement ps = ctx.connection().prepareStatement(INSERT_STAMPED)) {
            ps.setLong(1, id);
            ps.setLong(2, amount);
            ps.setLong(3, ctx.term());
            ps.executeUpdate();
        }
    }

    @Test
    void aVoidRunCommitsItsWritesAndAFailingOneRollsBack() {
        long t = nextTerm();
        newLeader.run(token(t, "new"), ctx -> ctx.insertInto(PAYMENT).set(ID, 9_001L).set(AMOUNT, 1L).execute());
        newLeader.run(token(t, "new"), WriteDescription.of("public.payment", "UPDATE", "pay-9001", null),
                ctx -> ctx.update(PAYMENT).set(AMOUNT, 2L).where(ID.eq(9_001L)).execute());
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 9001 AND amount = 2")).isEqualTo(t);

        assertThatThrownBy(() -> newLeader.run(token(t, "new"), ctx -> {
            ctx.insertInto(PAYMENT).set(ID, 9_002L).set(AMOUNT, 1L).execute();
            throw new IllegalStateException("business rule says no");
        })).isInstanceOf(IllegalStateException.class).hasMessage("business rule says no");
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 9002")).isZero();
    }

    @Test
    void aPlainJdbcInsertThroughTheContextsConnectionIsStampedAndFenced() {
        long t = nextTerm();
        newLeader.run(token(t, "new"), ctx -> insertStamped(ctx, 9_101L, 7L));
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 9101 AND amount = 7")).isEqualTo(t);

        // Fenced like jOOQ: the guard checks the plain statement too, and refuses a table of another resource.
        Fixtures.sql(db, "CREATE TABLE IF NOT EXISTS public.invoice (id bigint PRIMARY KEY)",
                "SELECT fencing.protect_table('public.invoice', 'billing')");
        assertThatThrownBy(() -> newLeader.run(token(t, "new"), ctx -> {
            insertStamped(ctx, 9_102L, 1L);
            try (PreparedStatement ps = ctx.connection().prepareStatement(
                    "INSERT INTO public.invoice (id, fencing_term) VALUES (1, ?)")) {
                ps.setLong(1, ctx.term());
                ps.executeUpdate();
            }
        })).isInstanceOfSatisfying(NotFencedException.class, e -> assertThat(e.table()).isEqualTo("public.invoice"));
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 9102")).isZero();
        assertThat(count(db, "SELECT count(*) FROM invoice")).isZero();
    }

    @Test
    void aStaleTermWritingThroughPlainJdbcIsRejectedAndAuditedOnce() throws Exception {
        long t = nextTerm();
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        AtomicInteger oldPid = new AtomicInteger();
        ExecutorService pausedLeader = Executors.newSingleThreadExecutor();
        try {
            Future<?> paused = pausedLeader.submit(() -> oldLeader.run(token(t, "paused"),
                    WriteDescription.of("public.payment", "INSERT", "pay-9201", null), ctx -> {
                        insertStamped(ctx, 9_201L, 1L);
                        try (PreparedStatement ps = ctx.connection().prepareStatement("SELECT pg_backend_pid()");
                             ResultSet rs = ps.executeQuery()) {
                            rs.next();
                            oldPid.set(rs.getInt(1));
                        }
                        inside.countDown();
                        if (!resume.await(60, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("test never resumed the paused leader");
                        }
                        insertStamped(ctx, 9_202L, 1L);
                    }));
            assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();

            newLeader.run(token(t + 1, "next"), ctx -> insertStamped(ctx, 9_210L, 2L));
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                    .until(() -> count(db, "SELECT count(*) FROM pg_stat_activity WHERE pid = " + oldPid.get()) == 0);

            resume.countDown();
            assertThatThrownBy(paused::get).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOfSatisfying(StaleTermException.class, e -> {
                        assertThat(e.offeredTerm()).isEqualTo(t);
                        assertThat(e.highestAccepted()).isEqualTo(t + 1);
                        assertThat(e.audited()).isTrue();
                    });
        } finally {
            resume.countDown();
            pausedLeader.shutdownNow();
        }
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id IN (9201, 9202)")).isZero();
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 9210")).isEqualTo(t + 1);
        assertThat(count(db, "SELECT count(*) FROM fencing.rejected_write WHERE business_key = 'pay-9201'"))
                .isEqualTo(1);
        assertThat(count(db, "SELECT count(*) FROM fencing.rejected_write WHERE business_key = 'pay-9201'"
                + " AND offered_term = " + t + " AND highest_accepted = " + (t + 1) + " AND leader_id = 'paused'"
                + " AND reason = 'stale_term'")).isEqualTo(1);
    }

    @Test
    void theContextsConnectionLeavesCommitAndCloseToTheWriterAndDiesWithTheWork() {
        long t = nextTerm();
        AtomicReference<Connection> kept = new AtomicReference<>();
        assertThatThrownBy(() -> newLeader.run(token(t, "new"), ctx -> {
            insertStamped(ctx, 9_301L, 1L);
            kept.set(ctx.connection());
            ctx.connection().commit();
        })).isInstanceOf(FencedWorkException.class).rootCause().isInstanceOf(SQLException.class)
                .hasMessageContaining("commit(...) is not allowed");
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 9301")).isZero();

        assertThatThrownBy(() -> kept.get().createStatement()).isInstanceOf(SQLException.class)
                .hasMessageContaining("used outside its fenced transaction");
        newLeader.run(token(t, "new"), ctx -> {
            assertThatThrownBy(() -> ctx.connection().close()).isInstanceOf(SQLException.class);
            assertThatThrownBy(() -> ctx.connection().setAutoCommit(true)).isInstanceOf(SQLException.class);
            insertStamped(ctx, 9_302L, 1L);
        });
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 9302")).isEqualTo(t);
    }
}
