package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.AMOUNT;
import static dev.fenceline.fencing.Fixtures.ID;
import static dev.fenceline.fencing.Fixtures.NOTE;
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
import java.sql.Statement;
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

/**
 * The writer against a real PostgreSQL: acceptance, advance, stale rejection with audit, the paused leader; the same
 * for work without a result ({@code run}) and for plain JDBC through {@code FencedContext.connection()}.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FencedWriterIT {
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
        oldLeaderPool = Fixtures.pool(db, 3, "old-leader");
        newLeaderPool = Fixtures.pool(db, 3, "new-leader");
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

    private long highestAccepted() {
        return newLeader.highestAccepted("settlement");
    }

    @Test
    void currentTermCommitsStampsRowsAndNewerTermAdvancesTheMarkWithHistory() {
        long t = highestAccepted() + 1;
        oldLeader.transaction(
                token(t, "a"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 1_000L).set(AMOUNT, 5L).execute());
        oldLeader.transaction(
                token(t, "a"),
                ctx -> ctx.update(PAYMENT).set(AMOUNT, 6L).where(ID.eq(1_000L)).execute());
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 1000 AND amount = 6"))
                .isEqualTo(t);
        assertThat(highestAccepted()).isEqualTo(t);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.term_history WHERE resource = 'settlement' AND term = " + t
                                + " AND leader_id = 'a'"))
                .isEqualTo(1);
    }

    @Test
    void staleLeaderWriteIsRejectedAndAudited() {
        long current = highestAccepted() + 2;
        newLeader.enter(token(current, "new"));
        long stale = current - 1;
        long auditBefore = count(db, "SELECT count(*) FROM fencing.rejected_write");

        assertThatThrownBy(() -> oldLeader.transaction(
                        token(stale, "old"),
                        WriteDescription.of(
                                "public.payment", "insert", "pay-2001", "{\"amount\": 10, \"currency\": \"EUR\"}"),
                        ctx -> ctx.insertInto(PAYMENT)
                                .set(ID, 2_001L)
                                .set(AMOUNT, 10L)
                                .execute()))
                .isInstanceOfSatisfying(StaleTermException.class, e -> {
                    assertThat(e.resource()).isEqualTo("settlement");
                    assertThat(e.offeredTerm()).isEqualTo(stale);
                    assertThat(e.highestAccepted()).isEqualTo(current);
                    assertThat(e.table()).isEqualTo("public.payment");
                    assertThat(e.audited()).isTrue();
                });

        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 2001")).isZero();
        assertThat(count(db, "SELECT count(*) FROM fencing.rejected_write")).isEqualTo(auditBefore + 1);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE resource = 'settlement'"
                                + " AND offered_term = " + stale + " AND highest_accepted = " + current
                                + " AND leader_id = 'old' AND table_name = 'public.payment' AND operation = 'INSERT'"
                                + " AND business_key = 'pay-2001' AND payload ->> 'currency' = 'EUR' AND NOT payload_truncated"
                                + " AND reason = 'stale_term' AND source = 'writer' AND db_user = 'postgres'"
                                + " AND application_name = 'old-leader'"))
                .isEqualTo(1);
        assertThat(highestAccepted()).isEqualTo(current);
    }

    /**
     * A coordinator rebuilt from nothing can hand a term number out a second time. The mark remembers which leader
     * advanced it, so a second leader offering the same term is rejected like a stale one and audited.
     */
    @Test
    void sameTermOfferedByAnotherLeaderIsRejectedAndAudited() {
        long t = highestAccepted() + 1;
        newLeader.transaction(
                token(t, "first"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 8_001L).set(AMOUNT, 1L).execute());

        assertThatThrownBy(() -> oldLeader.transaction(
                        token(t, "second"),
                        WriteDescription.of("public.payment", "INSERT", "pay-8002", null),
                        ctx -> ctx.insertInto(PAYMENT)
                                .set(ID, 8_002L)
                                .set(AMOUNT, 1L)
                                .execute()))
                .isInstanceOfSatisfying(StaleTermException.class, e -> {
                    assertThat(e.offeredTerm()).isEqualTo(t);
                    assertThat(e.highestAccepted()).isEqualTo(t);
                    assertThat(e.audited()).isTrue();
                    assertThat(e.getCause()).hasMessageContaining("already held by leader first");
                });
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 8002")).isZero();
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE offered_term = " + t
                                + " AND leader_id = 'second' AND reason = 'term_conflict'"))
                .isEqualTo(1);
        // The holder of the term is untouched and keeps writing.
        newLeader.transaction(
                token(t, "first"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 8_003L).set(AMOUNT, 1L).execute());
        assertThat(highestAccepted()).isEqualTo(t);
    }

    /**
     * The advance terminates only open transactions of older terms; the old leader's pooled sessions, idle between
     * its transactions, hold nothing and stay. Its next transaction is rejected by the mark its first statement reads,
     * before the work runs, and audited by the writer.
     */
    @Test
    void leaderDeposedBetweenItsTransactionsIsRejectedBeforeItsWorkRunsAndAudited() {
        long t = highestAccepted() + 1;
        oldLeader.transaction(
                token(t, "old"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 3_001L).set(AMOUNT, 1L).execute());
        newLeader.enter(token(t + 1, "new"));
        long auditBefore = count(db, "SELECT count(*) FROM fencing.rejected_write WHERE offered_term = " + t);
        AtomicInteger workRan = new AtomicInteger();

        assertThatThrownBy(() -> oldLeader.transaction(
                        token(t, "old"), WriteDescription.of("public.payment", "UPDATE", "pay-3001", null), ctx -> {
                            workRan.incrementAndGet();
                            return ctx.update(PAYMENT)
                                    .set(AMOUNT, 99L)
                                    .where(ID.eq(3_001L))
                                    .execute();
                        }))
                .isInstanceOfSatisfying(StaleTermException.class, e -> {
                    assertThat(e.offeredTerm()).isEqualTo(t);
                    assertThat(e.highestAccepted()).isEqualTo(t + 1);
                    assertThat(e.audited()).isTrue();
                });
        assertThat(workRan).as("runs of the deposed leader's work").hasValue(0);
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 3001")).isEqualTo(1);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE offered_term = " + t
                                + " AND highest_accepted = " + (t + 1) + " AND business_key = 'pay-3001'"))
                .isEqualTo(auditBefore + 1);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE business_key = 'pay-3001'"
                                + " AND source = 'writer' AND reason = 'stale_term' AND table_name = 'public.payment'"))
                .isEqualTo(1);
    }

    @Test
    void pausedLeaderTransactionCannotCommitAfterNewTermAdvances() throws Exception {
        long t = highestAccepted() + 1;
        Throwable rejection = pausedLeaderDeposedMidTransaction(
                t,
                false,
                "pay-4001",
                ctx -> ctx.insertInto(PAYMENT).set(ID, 4_001L).set(AMOUNT, 1L).execute(),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 4_002L).set(AMOUNT, 1L).execute(),
                ctx -> ctx.insertInto(PAYMENT)
                        .set(ID, 4_100L)
                        .set(AMOUNT, 2L)
                        .set(NOTE, "next")
                        .execute());
        assertThat(rejection).isInstanceOfSatisfying(StaleTermException.class, e -> {
            assertThat(e.offeredTerm()).isEqualTo(t);
            assertThat(e.highestAccepted()).isEqualTo(t + 1);
            assertThat(e.audited()).isTrue();
        });
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id IN (4001, 4002)"))
                .isZero();
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 4100"))
                .isEqualTo(t + 1);
        assertThat(count(
                        db,
                        "SELECT terminated_sessions FROM fencing.term_history WHERE resource = 'settlement'"
                                + " AND term = " + (t + 1)))
                .isGreaterThanOrEqualTo(1);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE business_key = 'pay-4001'"
                                + " AND offered_term = " + t + " AND highest_accepted = " + (t + 1)))
                .isEqualTo(1);
    }

    /**
     * A common shape of work: lock the rows to settle ({@code SELECT ... FOR UPDATE}), then update them. A leader
     * paused between the two has written nothing yet, but its transaction already holds the fence lock (its first
     * statement entered it at the mark's term), so the next term's advance ends it and the new leader's update of
     * the same row does not wait for its row lock.
     */
    @Test
    void aPausedLeaderThatHasOnlyLockedRowsIsEndedByTheNextTermsAdvance() throws Exception {
        long t = highestAccepted() + 1;
        oldLeader.run(
                token(t, "paused"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 4_201L).set(AMOUNT, 1L).execute());
        Throwable rejection = pausedLeaderDeposedMidTransaction(
                t,
                true,
                "pay-4201",
                ctx -> ctx.dsl().fetch("SELECT id FROM payment WHERE id = 4201 FOR UPDATE"),
                ctx -> ctx.update(PAYMENT)
                        .set(NOTE, "paused")
                        .where(ID.eq(4_201L))
                        .execute(),
                ctx -> ctx.update(PAYMENT)
                        .set(NOTE, "next")
                        .where(ID.eq(4_201L))
                        .execute());
        assertThat(rejection).isInstanceOf(FencingException.class);
        assertThat(Fixtures.text(db, "SELECT note || ' ' || fencing_term FROM payment WHERE id = 4201"))
                .isEqualTo("next " + (t + 1));
    }

    /**
     * The old leader (term {@code t}) runs {@code firstWrite} and then stops with its transaction open (the "pause");
     * the next leader writes with {@code t + 1}, which must not wait for the paused transaction, and whose advance
     * terminates the paused transaction, which holds the fence lock of the older term (its backend leaves
     * {@code pg_stat_activity}, within advance_timeout). Then the old leader resumes with {@code secondWrite}. Returns
     * what its {@code run} threw.
     *
     * <p>{@code termAcceptedBefore}: the old leader's term is accepted (entered and committed) before the paused
     * transaction begins, so that transaction enters at its first write with the fence lock shared, as every
     * transaction of an established leader does. Otherwise the paused transaction is the old leader's first at its
     * term: its first write advances the mark, and it holds the fence lock exclusively (and the mark row) while it is
     * paused; the next advance ends it all the same.
     */
    private Throwable pausedLeaderDeposedMidTransaction(
            long t,
            boolean termAcceptedBefore,
            String businessKey,
            FencedAction firstWrite,
            FencedAction secondWrite,
            FencedAction nextLeadersWrite)
            throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        AtomicInteger oldPid = new AtomicInteger();
        if (termAcceptedBefore) {
            oldLeader.enter(token(t, "paused"));
        }
        ExecutorService pausedLeader = Executors.newSingleThreadExecutor();
        try {
            Future<?> paused = pausedLeader.submit(() -> oldLeader.run(
                    token(t, "paused"), WriteDescription.of("public.payment", "INSERT", businessKey, null), ctx -> {
                        firstWrite.run(ctx);
                        oldPid.set(
                                ctx.dsl().fetchSingle("SELECT pg_backend_pid()").get(0, Integer.class));
                        inside.countDown();
                        if (!resume.await(60, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("test never resumed the paused leader");
                        }
                        secondWrite.run(ctx);
                    }));
            assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();

            newLeader.run(token(t + 1, "next"), nextLeadersWrite);
            await().atMost(Duration.ofSeconds(5))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> count(db, "SELECT count(*) FROM pg_stat_activity WHERE pid = " + oldPid.get()) == 0);

            resume.countDown();
            try {
                paused.get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                return e.getCause();
            }
            throw new AssertionError("the paused leader's transaction committed after the next term advanced");
        } finally {
            resume.countDown();
            pausedLeader.shutdownNow();
        }
    }

    @Test
    void writingATableOfAnotherResourceInsideTheWriterIsRejectedAsNotFenced() {
        Fixtures.sql(
                db,
                "CREATE TABLE IF NOT EXISTS public.invoice (id bigint PRIMARY KEY)",
                "SELECT fencing.protect_table('public.invoice', 'billing')");
        long t = highestAccepted() + 1;
        assertThatThrownBy(() -> newLeader.transaction(token(t, "new"), ctx -> {
                    ctx.insertInto(PAYMENT).set(ID, 5_001L).set(AMOUNT, 1L).execute();
                    return ctx.dsl()
                            .insertInto(org.jooq.impl.DSL.table("public.invoice"))
                            .columns(org.jooq.impl.DSL.field("id"))
                            .values(1)
                            .execute();
                }))
                .isInstanceOfSatisfying(NotFencedException.class, e -> {
                    assertThat(e.resource()).isEqualTo("billing");
                    assertThat(e.table()).isEqualTo("public.invoice");
                });
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 5001")).isZero();
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE resource = 'billing'"
                                + " AND reason = 'no_term' AND source = 'trigger'"))
                .isEqualTo(1);
    }

    @Test
    void registeringAResourceIsIdempotentAndStartsItsMarkAtZero() {
        long key = newLeader.registerResource("orders");
        assertThat(newLeader.registerResource("orders")).isEqualTo(key);
        assertThat(newLeader.highestAccepted("orders")).isZero();
        assertThatThrownBy(() -> newLeader.highestAccepted("never-registered"))
                .isInstanceOf(UnknownResourceException.class);
    }

    @Test
    void everyTransactionCarriesItsTermForItselfOnlyAndStaleTermsAreStillRejected() throws Exception {
        long t = highestAccepted() + 1;
        int pid = newLeader.transaction(token(t, "stamping"), ctx -> {
            assertThat(ctx.dsl()
                            .fetchSingle("SELECT current_setting('fencing.term'), current_setting('fencing.resource'),"
                                    + " current_setting('fencing.leader_id')")
                            .into(String[].class))
                    .containsExactly(Long.toString(t), "settlement", "stamping");
            ctx.insertInto(PAYMENT).set(ID, 7_001L).set(AMOUNT, 1L).execute();
            return ctx.dsl().fetchSingle("SELECT pg_backend_pid()").get(0, Integer.class);
        });
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 7001"))
                .isEqualTo(t);
        // Set for the transaction only (set_config(..., true)): nothing is left on the pooled server sessions, the
        // writer's among them (the pool's three connections, borrowed at once).
        java.util.List<Connection> all = new java.util.ArrayList<>();
        java.util.Set<Integer> pids = new java.util.HashSet<>();
        try {
            for (int i = 0; i < 3; i++) {
                Connection c = newLeaderPool.getConnection();
                all.add(c);
                try (Statement s = c.createStatement();
                        ResultSet rs = s.executeQuery(
                                "SELECT coalesce(current_setting('fencing.term', true), '')," + " pg_backend_pid()")) {
                    rs.next();
                    assertThat(rs.getString(1))
                            .as("fencing.term on pooled session %s", rs.getInt(2))
                            .isEmpty();
                    pids.add(rs.getInt(2));
                }
            }
        } finally {
            for (Connection c : all) {
                c.close();
            }
        }
        assertThat(pids).as("the pooled sessions checked").contains(pid);
        assertThatThrownBy(() -> newLeader.transaction(
                        token(t - 1, "stale"),
                        ctx -> ctx.insertInto(PAYMENT)
                                .set(ID, 7_002L)
                                .set(AMOUNT, 1L)
                                .execute()))
                .isInstanceOf(StaleTermException.class);
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 7002")).isZero();
    }

    /** fencing.entered_transactions: what a DBA sees, the open transactions the next advance would end. */
    @Test
    void transactionsEnteredAtTheCurrentTermAreListedForDbasWhileTheyAreOpen() throws Exception {
        long t = highestAccepted() + 1;
        newLeader.transaction(
                token(t, "new"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 6_001L).set(AMOUNT, 1L).execute());
        String listed = newLeader.transaction(token(t, "new"), ctx -> {
            ctx.insertInto(PAYMENT).set(ID, 6_002L).set(AMOUNT, 1L).execute();
            int pid = ctx.dsl().fetchSingle("SELECT pg_backend_pid()").get(0, Integer.class);
            return Fixtures.text(
                    db,
                    "SELECT string_agg(application_name || ':' || advancing || ':' || (pid = " + pid
                            + "), ',') FROM fencing.entered_transactions WHERE resource = 'settlement'");
        });
        assertThat(listed)
                .as("entered transactions of settlement while the writer's was open (app:advancing:it)")
                .isEqualTo("new-leader:false:true");
        assertThat(count(db, "SELECT count(*) FROM fencing.entered_transactions WHERE resource = 'settlement'"))
                .as("entered transactions once it committed")
                .isZero();
    }

    // ---- FencedWriter.run (work without a result) and plain JDBC through FencedContext.connection() ----

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
        long t = highestAccepted() + 1;
        newLeader.run(
                token(t, "new"),
                ctx -> ctx.insertInto(PAYMENT).set(ID, 9_001L).set(AMOUNT, 1L).execute());
        newLeader.run(
                token(t, "new"),
                WriteDescription.of("public.payment", "UPDATE", "pay-9001", null),
                ctx -> ctx.update(PAYMENT).set(AMOUNT, 2L).where(ID.eq(9_001L)).execute());
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 9001 AND amount = 2"))
                .isEqualTo(t);

        assertThatThrownBy(() -> newLeader.run(token(t, "new"), ctx -> {
                    ctx.insertInto(PAYMENT).set(ID, 9_002L).set(AMOUNT, 1L).execute();
                    throw new IllegalStateException("business rule says no");
                }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("business rule says no");
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 9002")).isZero();
    }

    @Test
    void aPlainJdbcInsertThroughTheContextsConnectionIsStampedAndFenced() {
        long t = highestAccepted() + 1;
        newLeader.run(token(t, "new"), ctx -> insertStamped(ctx, 9_101L, 7L));
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 9101 AND amount = 7"))
                .isEqualTo(t);

        // Fenced like jOOQ: the guard checks the plain statement too, and refuses a table of another resource.
        Fixtures.sql(
                db,
                "CREATE TABLE IF NOT EXISTS public.refund (id bigint PRIMARY KEY)",
                "SELECT fencing.protect_table('public.refund', 'refunds')");
        assertThatThrownBy(() -> newLeader.run(token(t, "new"), ctx -> {
                    insertStamped(ctx, 9_102L, 1L);
                    try (PreparedStatement ps = ctx.connection()
                            .prepareStatement("INSERT INTO public.refund (id, fencing_term) VALUES (1, ?)")) {
                        ps.setLong(1, ctx.term());
                        ps.executeUpdate();
                    }
                }))
                .isInstanceOfSatisfying(
                        NotFencedException.class, e -> assertThat(e.table()).isEqualTo("public.refund"));
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 9102")).isZero();
        assertThat(count(db, "SELECT count(*) FROM refund")).isZero();
    }

    @Test
    void aStaleTermWritingThroughPlainJdbcIsRejectedAndAuditedOnce() throws Exception {
        long t = highestAccepted() + 1;
        Throwable rejection = pausedLeaderDeposedMidTransaction(
                t,
                true,
                "pay-9201",
                ctx -> insertStamped(ctx, 9_201L, 1L),
                ctx -> insertStamped(ctx, 9_202L, 1L),
                ctx -> insertStamped(ctx, 9_210L, 2L));
        assertThat(rejection).isInstanceOfSatisfying(StaleTermException.class, e -> {
            assertThat(e.offeredTerm()).isEqualTo(t);
            assertThat(e.highestAccepted()).isEqualTo(t + 1);
            assertThat(e.audited()).isTrue();
        });
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id IN (9201, 9202)"))
                .isZero();
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 9210"))
                .isEqualTo(t + 1);
        assertThat(count(db, "SELECT count(*) FROM fencing.rejected_write WHERE business_key = 'pay-9201'"))
                .isEqualTo(1);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE business_key = 'pay-9201'"
                                + " AND offered_term = " + t + " AND highest_accepted = " + (t + 1)
                                + " AND leader_id = 'paused'"
                                + " AND reason = 'stale_term'"))
                .isEqualTo(1);
    }

    @Test
    void theContextsConnectionLeavesCommitAndCloseToTheWriterAndDiesWithTheWork() {
        long t = highestAccepted() + 1;
        AtomicReference<Connection> kept = new AtomicReference<>();
        assertThatThrownBy(() -> newLeader.run(token(t, "new"), ctx -> {
                    insertStamped(ctx, 9_301L, 1L);
                    kept.set(ctx.connection());
                    ctx.connection().commit();
                }))
                .isInstanceOf(FencedWorkException.class)
                .rootCause()
                .isInstanceOf(SQLException.class)
                .hasMessageContaining("commit(...) is not allowed");
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 9301")).isZero();

        assertThatThrownBy(() -> kept.get().createStatement())
                .isInstanceOf(SQLException.class)
                .hasMessageContaining("used outside its fenced transaction");
        newLeader.run(token(t, "new"), ctx -> {
            assertThatThrownBy(() -> ctx.connection().close()).isInstanceOf(SQLException.class);
            assertThatThrownBy(() -> ctx.connection().setAutoCommit(true)).isInstanceOf(SQLException.class);
            insertStamped(ctx, 9_302L, 1L);
        });
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 9302"))
                .isEqualTo(t);
    }
}
