package dev.fenceline.fencing;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.testkit.PgBouncer;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The writer on its defaults ({@code FencedWriterConfig.defaults()}, nothing else configured) behind a real PgBouncer in
 * transaction mode with 2 server sessions, shared by three writers logged in as the same {@code fencing_app} login:
 * the deployment a team gets when it puts the service behind its usual pooler and changes nothing.
 *
 * <p>Each round: the current leader settles payments (with two transactions open at once, so every client connection
 * of its pool has been used), then freezes inside a transaction after its first write (a GC pause, a stopped VM); the
 * next leader, one term higher, settles the frozen payments itself and more; the frozen leader resumes and commits, then
 * carries on settling as a deposed leader that has not noticed would. Invariants: the frozen transaction and every
 * later transaction of the deposed leader are rejected with {@link StaleTermException}, each audited exactly once;
 * nothing the deposed leader wrote after its freeze is committed; no payment is settled twice. The roles rotate over the
 * three writers, so any state a writer remembers about a pooled client connection is carried from round to round.
 *
 * <p>No sleeps: the frozen transaction is held by a latch, and the next leader's commit returning is what the round
 * waits for. Every wait is bounded ({@link #WAIT_SECONDS}).
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PooledDefaultsIT {
    private static final String RESOURCE = "pooled-defaults";
    private static final String TABLE = "public.settlement";
    private static final int ROUNDS = 6;
    private static final int LATE_ATTEMPTS = 4;
    private static final int WAIT_SECONDS = 60;

    private TestDatabase db;
    private String app;
    private PgBouncer bouncer;
    private final List<HikariDataSource> pools = new ArrayList<>();
    private final List<FencedWriter> writers = new ArrayList<>();
    private final List<String> names = List.of("a", "b", "c");
    private final ExecutorService background = Executors.newCachedThreadPool();

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        app = "pooled_defaults_app_" + ProcessHandle.current().pid();
        Fixtures.sql(
                db,
                "CREATE ROLE " + app + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE IN ROLE fencing_app",
                "CREATE TABLE " + TABLE + " (payment_id bigint NOT NULL, term bigint NOT NULL, leader text NOT NULL)",
                "SELECT fencing.protect_table('" + TABLE + "', '" + RESOURCE + "')",
                "GRANT SELECT, INSERT ON " + TABLE + " TO " + app);
        bouncer = PgBouncer.start(
                db.server(),
                PgBouncer.Options.defaults().poolMode("transaction").defaultPoolSize(2));
        for (String name : names) {
            HikariDataSource pool = Databases.dataSource(DatabaseConfig.builder(bouncer.jdbcUrl(db.name()))
                    .username(app)
                    .maximumPoolSize(2)
                    .applicationName("leader-" + name)
                    .poolName("pooled-defaults-" + name)
                    .build());
            pools.add(pool);
            writers.add(FencedWriter.create(pool, FencedWriterConfig.defaults()));
        }
    }

    @AfterAll
    void tearDown() throws InterruptedException {
        background.shutdownNow();
        background.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS);
        pools.forEach(HikariDataSource::close);
        if (bouncer != null) {
            bouncer.close();
        }
        if (app != null) {
            Fixtures.sql(
                    db,
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + app + "'",
                    "DROP OWNED BY " + app,
                    "DROP ROLE IF EXISTS " + app);
        }
    }

    private static FencingToken token(long term, String leader) {
        return FencingToken.of(RESOURCE, term, leader);
    }

    private static WriteDescription described(String key) {
        return WriteDescription.of(TABLE, "INSERT", key, null);
    }

    private static int settle(FencedContext ctx, long paymentId) {
        return ctx.dsl()
                .execute(
                        "INSERT INTO " + TABLE + " (payment_id, term, leader) VALUES (?, ?, ?)",
                        paymentId,
                        ctx.term(),
                        ctx.token().leaderId());
    }

    private long mark() {
        return Fixtures.count(
                db, "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = '" + RESOURCE + "'");
    }

    private long auditRows(String businessKey) {
        return Fixtures.count(
                db,
                "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + RESOURCE + "' AND business_key = '"
                        + businessKey + "'");
    }

    /** What a call ended with: "committed", "StaleTermException(audited=…)", or the exception with its SQLSTATE. */
    private static String outcome(Throwable t) {
        if (t == null) {
            return "committed";
        }
        if (t instanceof StaleTermException s) {
            return "StaleTermException(audited=" + s.audited() + ", highestAccepted=" + s.highestAccepted() + ")";
        }
        return t.getClass().getSimpleName() + "(SQLSTATE " + AdversaryRole.sqlState(t) + "): " + t.getMessage();
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof ExecutionException || t instanceof java.util.concurrent.CompletionException
                ? t.getCause()
                : t;
    }

    @Test
    void
            aLeaderFrozenInsideItsTransactionThroughATransactionPoolerOnTheWritersDefaultsIsRejectedOnceAuditedAndNothingItWritesAfterTheNextTermCommits()
                    throws Exception {
        List<String> violations = new ArrayList<>();
        for (int round = 0; round < ROUNDS && violations.isEmpty(); round++) {
            violations.addAll(round(round));
        }
        assertThat(violations)
                .as("violations of the fence through PgBouncer (transaction mode, 2 server sessions) with"
                        + " FencedWriterConfig.defaults()")
                .isEmpty();
    }

    /** One round; returns its violations (empty: the round was safe). */
    private List<String> round(int round) throws Exception {
        List<String> violations = new ArrayList<>();
        FencedWriter old = writers.get(round % 3);
        FencedWriter next = writers.get((round + 1) % 3);
        String oldName = names.get(round % 3);
        String nextName = names.get((round + 1) % 3);
        long oldTerm = round + 1;
        long newTerm = round + 2;
        long base = 1000L * (round + 1);
        String where = "round " + round + " (leader " + oldName + " at term " + oldTerm + " deposed by leader "
                + nextName + " at term " + newTerm + "): ";

        // a. The current leader settles: first alone (its first transaction of the term may advance the mark), then two
        //    transactions open at once, so both client connections of its pool are in use. Each must commit; a failure
        //    is a violation (the current leader at the current term), and the round goes on to check the fence.
        try {
            old.transaction(token(oldTerm, oldName), ctx -> settle(ctx, base));
        } catch (RuntimeException e) {
            violations.add(where + "the current leader's transaction at its own term did not commit: " + outcome(e));
        }
        CyclicBarrier bothInside = new CyclicBarrier(2);
        List<CompletableFuture<Integer>> pair = new ArrayList<>();
        for (long id = base + 1; id <= base + 2; id++) {
            long paymentId = id;
            pair.add(CompletableFuture.supplyAsync(
                    () -> old.transaction(token(oldTerm, oldName), ctx -> {
                        try {
                            return settle(ctx, paymentId);
                        } finally {
                            try {
                                bothInside.await(WAIT_SECONDS, TimeUnit.SECONDS); // also when the write failed
                            } catch (Exception e) {
                                throw new IllegalStateException(
                                        "the two transactions of leader " + oldName + " were not open at once", e);
                            }
                        }
                    }),
                    background));
        }
        for (CompletableFuture<Integer> f : pair) {
            Throwable failed = catchFuture(f);
            if (failed != null) {
                violations.add(where + "one of two concurrent transactions of the current leader at its own term did"
                        + " not commit: " + outcome(failed));
            }
        }
        if (mark() != oldTerm) {
            violations.add(where + "the mark before the next term is " + mark() + ", not " + oldTerm);
        }

        // b. It freezes inside a transaction, after its first write.
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        String frozenKey = "r" + round + "-frozen";
        CompletableFuture<Integer> frozen = CompletableFuture.supplyAsync(
                () -> old.transaction(token(oldTerm, oldName), described(frozenKey), ctx -> {
                    int n = settle(ctx, base + 10);
                    inside.countDown();
                    try {
                        if (!resume.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("never resumed");
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                    return n + settle(ctx, base + 11);
                }),
                background);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (!inside.await(20, TimeUnit.MILLISECONDS) && !frozen.isDone() && System.nanoTime() < deadline) {
            Thread.onSpinWait(); // until the frozen transaction is inside, or has ended without getting there
        }
        boolean isFrozen = inside.getCount() == 0;
        if (!isFrozen) {
            resume.countDown();
            violations.add(where + "the current leader's transaction to be frozen failed at its first write: "
                    + outcome(catchFuture(frozen)));
        }

        // c. The next leader settles the frozen payments itself, and one more.
        Throwable nextOutcome = null;
        try {
            next.transaction(
                    token(newTerm, nextName),
                    ctx -> settle(ctx, base + 10) + settle(ctx, base + 11) + settle(ctx, base + 20));
        } catch (RuntimeException e) {
            nextOutcome = e;
        }
        resume.countDown();
        if (nextOutcome != null) {
            violations.add(where + "the next leader's first transaction did not commit: " + outcome(nextOutcome));
        }
        if (mark() != newTerm) {
            violations.add(where + "the mark after the next leader's first transaction is " + mark() + ", not "
                    + newTerm + ": the old leader is not deposed, nothing more to check");
            catchFuture(frozen);
            return violations;
        }

        // d. The frozen leader resumes and commits.
        if (isFrozen) {
            Throwable frozenOutcome = catchFuture(frozen);
            if (!(frozenOutcome instanceof StaleTermException s && s.audited())) {
                violations.add(where + "the frozen transaction, resumed after the next term committed, ended "
                        + outcome(frozenOutcome) + " (expected StaleTermException, audited)");
            }
            long frozenRows = auditRows(frozenKey);
            if (frozenRows != 1) {
                violations.add(where + "the frozen transaction has " + frozenRows + " audit rows (expected exactly 1)");
            }
        }

        // e. The deposed leader carries on settling, one transaction per payment.
        for (int i = 0; i < LATE_ATTEMPTS; i++) {
            long paymentId = base + 30 + i;
            String key = "r" + round + "-late-" + paymentId;
            Throwable late = null;
            try {
                old.transaction(token(oldTerm, oldName), described(key), ctx -> settle(ctx, paymentId));
            } catch (RuntimeException e) {
                late = e;
            }
            if (!(late instanceof StaleTermException s && s.audited())) {
                violations.add(where + "the deposed leader's transaction settling payment " + paymentId + " ended "
                        + outcome(late) + " (expected StaleTermException, audited)");
            }
            long rows = auditRows(key);
            if (rows != 1) {
                violations.add(where + "the deposed leader's transaction settling payment " + paymentId + " has " + rows
                        + " audit rows (expected exactly 1)");
            }
        }

        // f. The next leader settles those payments too (it does not know the deposed leader tried).
        try {
            next.transaction(token(newTerm, nextName), ctx -> {
                int n = 0;
                for (int i = 0; i < LATE_ATTEMPTS; i++) {
                    n += settle(ctx, base + 30 + i);
                }
                return n;
            });
        } catch (RuntimeException e) {
            violations.add(where + "the next leader's later transaction did not commit: " + outcome(e));
        }

        String twice = Fixtures.text(
                db,
                "SELECT string_agg(payment_id || ' by ' || who, '; ' ORDER BY payment_id) FROM"
                        + " (SELECT payment_id, string_agg(leader || '@' || term, ', ' ORDER BY term) AS who FROM "
                        + TABLE
                        + " WHERE payment_id BETWEEN " + base + " AND " + (base + 999) + " GROUP BY payment_id"
                        + " HAVING count(*) > 1) d");
        if (twice != null) {
            violations.add(where + "payments settled twice: " + twice);
        }
        long afterFreeze = Fixtures.count(
                db,
                "SELECT count(*) FROM " + TABLE + " WHERE term = " + oldTerm + " AND payment_id BETWEEN " + (base + 10)
                        + " AND " + (base + 999));
        if (afterFreeze != 0) {
            violations.add(where + afterFreeze + " rows the deposed leader wrote after its freeze are committed");
        }
        return violations;
    }

    /** The future's failure (null when it completed normally); a future still running after the bound is a failure. */
    private static Throwable catchFuture(CompletableFuture<?> f) throws InterruptedException {
        try {
            f.get(WAIT_SECONDS, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (TimeoutException e) {
            return new AssertionError("still running after " + WAIT_SECONDS + " s", e);
        }
    }
}
