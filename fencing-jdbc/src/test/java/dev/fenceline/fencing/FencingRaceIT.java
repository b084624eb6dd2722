package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Many writers, interleaved and advancing terms, two resources, writer mode and trigger mode mixed. Afterwards the
 * data must show that, per resource, accepted terms never went backwards in commit order, and that every rejection
 * was audited.
 *
 * <p>Commit-order witness: every business transaction ends with {@code UPDATE commit_order SET n = n + 1 ...
 * RETURNING n} on its resource's row. The row lock is held until commit, so the next transaction to get it reads the
 * committed value: committed transactions' {@code n} are strictly increasing in commit order.
 */
@ExtendWith(PostgresExtension.class)
class FencingRaceIT {
    private static final String[] RESOURCES = {"race-a", "race-b"};
    private static final int THREADS = 8;
    private static final int TRIGGER_MODE_THREADS = 2;
    private static final int TRANSACTIONS = 3_000;
    private static final long DEADLINE_MS = 90_000;

    private final Map<String, AtomicLong> leaderTerm = new ConcurrentHashMap<>();
    private final Map<String, LongAdder> committed = new ConcurrentHashMap<>();
    /**
     * Rejections the callers saw, per "resource/kind": {@code writer} (the writer's own: the mark its first statement
     * read, or a deposed term found after its connection was lost; it writes the audit row, source 'writer'),
     * {@code writer-by-guard} (a writer transaction the guard rejected with FL001 and audited, source 'trigger') and
     * {@code trigger} (raw transactions, FL001 audited by the trigger).
     */
    private final Map<String, LongAdder> rejected = new ConcurrentHashMap<>();
    /** Writer rejections whose audit call did not confirm (e.g. its connection was terminated meanwhile). */
    private final Map<String, LongAdder> unconfirmed = new ConcurrentHashMap<>();

    private final Map<String, LongAdder> unknown = new ConcurrentHashMap<>();
    /**
     * Transactions whose session was terminated (possibly after the trigger audited a rejection, which the caller
     * then never saw): raw ones, and writer ones reported deposed after the loss of their connection.
     */
    private final Map<String, LongAdder> rawTerminated = new ConcurrentHashMap<>();
    /** Writer transactions that failed otherwise (not committed, not a rejection), per SQLSTATE (or exception). */
    private final Map<String, LongAdder> aborted = new ConcurrentHashMap<>();

    @Test
    void acceptedTermsNeverGoBackwardsInCommitOrderAndEveryRejectionIsAudited(TestDatabase db) throws Exception {
        Fixtures.migrate(db);
        for (String r : RESOURCES) {
            String t = table(r);
            Fixtures.sql(
                    db,
                    "CREATE TABLE " + t + " (id bigserial PRIMARY KEY, term bigint NOT NULL, n bigint NOT NULL,"
                            + " worker int NOT NULL)",
                    "SELECT fencing.protect_table('" + t + "', '" + r + "')");
            leaderTerm.put(r, new AtomicLong(1));
            committed.put(r, new LongAdder());
            rejected.put(r + "/writer", new LongAdder());
            rejected.put(r + "/writer-by-guard", new LongAdder());
            rejected.put(r + "/trigger", new LongAdder());
            unconfirmed.put(r, new LongAdder());
            unknown.put(r, new LongAdder());
            rawTerminated.put(r, new LongAdder());
        }
        Fixtures.sql(
                db,
                "CREATE TABLE commit_order (resource text PRIMARY KEY, n bigint NOT NULL)",
                "INSERT INTO commit_order VALUES ('race-a', 0), ('race-b', 0)");

        AtomicInteger budget = new AtomicInteger(TRANSACTIONS);
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try (HikariDataSource writerPool = Fixtures.pool(db, 6, "race-writer");
                HikariDataSource rawPool = Fixtures.pool(db, TRIGGER_MODE_THREADS, "race-trigger")) {
            FencedWriter writer = FencedWriter.create(writerPool, FencedWriterConfig.defaults());
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < THREADS; i++) {
                int worker = i;
                futures.add(pool.submit(() -> {
                    while (budget.getAndDecrement() > 0 && System.currentTimeMillis() < deadline) {
                        String r = RESOURCES[ThreadLocalRandom.current().nextInt(RESOURCES.length)];
                        long term = pickTerm(r);
                        if (worker < TRIGGER_MODE_THREADS) {
                            rawTransaction(rawPool, r, term, worker);
                        } else {
                            writerTransaction(writer, r, term, worker);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(DEADLINE_MS + 30_000, TimeUnit.MILLISECONDS);
            }
        } finally {
            pool.shutdownNow();
        }

        for (String r : RESOURCES) {
            String t = table(r);
            // 1. Accepted terms never went backwards in commit order.
            long previousTerm = 0;
            long previousN = 0;
            long rows = 0;
            try (Connection c = Fixtures.connect(db);
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT term, n FROM " + t + " ORDER BY n")) {
                while (rs.next()) {
                    long term = rs.getLong(1);
                    long n = rs.getLong(2);
                    assertThat(n)
                            .as("commit order witness of %s is strictly increasing", r)
                            .isGreaterThan(previousN);
                    assertThat(term)
                            .as("%s: term at commit #%d went backwards", r, n)
                            .isGreaterThanOrEqualTo(previousTerm);
                    previousTerm = term;
                    previousN = n;
                    rows++;
                }
            }
            // 2. Every transaction the caller saw commit is there (plus at most the ones whose outcome was unknown).
            assertThat(rows)
                    .isBetween(
                            committed.get(r).sum(),
                            committed.get(r).sum() + unknown.get(r).sum());
            // 3. Every rejection seen by a caller has its audit row, and there are no rows without a rejection.
            //    Writer: exactly one row per rejection it audited itself whose audit call confirmed (unconfirmed
            //    ones: at most one).
            long writerRows = count(
                    db,
                    "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + r + "'"
                            + " AND source = 'writer'");
            long writerOwn = rejected.get(r + "/writer").sum();
            long writerSeen = writerOwn + rejected.get(r + "/writer-by-guard").sum();
            assertThat(writerRows)
                    .as("writer audit rows of %s", r)
                    .isBetween(writerOwn - unconfirmed.get(r).sum(), writerOwn);
            //    Trigger: one row per FL001 seen, raw or by a writer transaction (the writer does not audit those
            //    again); a session terminated right after its trigger audited may add one.
            long triggerRows = count(
                    db,
                    "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + r + "'"
                            + " AND source = 'trigger'");
            long triggerSeen = rejected.get(r + "/trigger").sum()
                    + rejected.get(r + "/writer-by-guard").sum();
            assertThat(triggerRows)
                    .as("trigger audit rows of %s", r)
                    .isBetween(triggerSeen, triggerSeen + rawTerminated.get(r).sum());
            assertThat(count(
                            db,
                            "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + r + "'"
                                    + " AND (offered_term >= highest_accepted OR reason <> 'stale_term')"))
                    .isZero();
            // The run really exercised advances and rejections.
            assertThat(count(db, "SELECT count(*) FROM fencing.term_history WHERE resource = '" + r + "'"))
                    .isGreaterThan(5);
            assertThat(writerSeen).isPositive();
            assertThat(rejected.get(r + "/trigger").sum()).isPositive();
            assertThat(rows).isGreaterThan(300);
        }
        System.out.printf(
                "race: committed=%s rejected=%s unconfirmed-audit=%s unknown-outcome=%s"
                        + " trigger-mode-terminated=%s writer-aborted(not deposed)=%s%n",
                committed, rejected, unconfirmed, unknown, rawTerminated, aborted);
    }

    private static String table(String resource) {
        return "ledger_" + resource.replace('-', '_');
    }

    /** Mostly the current leader's term, sometimes a stale one, sometimes a new leader (advance). */
    private long pickTerm(String r) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        AtomicLong t = leaderTerm.get(r);
        int p = rnd.nextInt(100);
        if (p < 3) {
            return t.incrementAndGet();
        }
        if (p < 15) {
            return Math.max(1, t.get() - 1 - rnd.nextInt(2));
        }
        return t.get();
    }

    private void writerTransaction(FencedWriter writer, String r, long term, int worker) {
        String t = table(r);
        try {
            writer.transaction(
                    FencingToken.of(r, term, "leader-" + term), // one leader per term, many threads
                    WriteDescription.of("public." + t, "INSERT", "w" + worker + "-" + term, null),
                    ctx -> ctx.dsl()
                            .execute(
                                    "WITH c AS (UPDATE commit_order SET n = n + 1 WHERE resource = ?"
                                            + " RETURNING n) INSERT INTO " + t
                                            + " (term, n, worker) SELECT ?, n, ? FROM c",
                                    r,
                                    term,
                                    worker));
            committed.get(r).increment();
        } catch (StaleTermException e) {
            String detail = guardRejection(e);
            if (detail != null && detail.contains("audited=t")) {
                rejected.get(r + "/writer-by-guard").increment(); // the trigger's audit row; the writer wrote none
                return;
            }
            rejected.get(r + "/writer").increment();
            if (!e.audited()) {
                unconfirmed.get(r).increment();
            }
            if (connectionLostIn(e)) {
                rawTerminated.get(r).increment();
            }
        } catch (CommitOutcomeUnknownException e) {
            unknown.get(r).increment();
        } catch (org.jooq.exception.DataAccessException | FenceUnavailableException e) {
            // e.g. a connection terminated by a same-term advance race: not committed, not a rejection
            SQLException sql = null;
            for (Throwable c = e; c != null && sql == null && c.getCause() != c; c = c.getCause()) {
                sql = c instanceof SQLException x ? x : null;
            }
            String kind = sql != null ? sql.getSQLState() : e.getClass().getSimpleName();
            aborted.computeIfAbsent(kind, k -> new LongAdder()).increment();
        }
    }

    /** The DETAIL of the guard's FL001 behind a writer's rejection, or null when the writer found it itself. */
    private static String guardRejection(Throwable t) {
        for (Throwable c = t; c != null && c.getCause() != c; c = c.getCause()) {
            if (c instanceof org.postgresql.util.PSQLException p && "FL001".equals(p.getSQLState())) {
                return p.getServerErrorMessage() == null
                        ? ""
                        : String.valueOf(p.getServerErrorMessage().getDetail());
            }
        }
        return null;
    }

    private static boolean connectionLostIn(Throwable t) {
        for (Throwable c = t; c != null && c.getCause() != c; c = c.getCause()) {
            if (c instanceof SQLException e
                    && e.getSQLState() != null
                    && (e.getSQLState().startsWith("08") || e.getSQLState().startsWith("57P"))) {
                return true;
            }
        }
        return false;
    }

    private void rawTransaction(HikariDataSource ds, String r, long term, int worker) {
        String t = table(r);
        boolean committing = false;
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement set = c.prepareStatement(
                            "SELECT set_config('fencing.term', ?, true), set_config('fencing.resource', ?, true)");
                    PreparedStatement ins = c.prepareStatement("WITH c AS (UPDATE commit_order SET n = n + 1"
                            + " WHERE resource = ? RETURNING n) INSERT INTO " + t
                            + " (term, n, worker) SELECT ?, n, ? FROM c")) {
                set.setString(1, Long.toString(term));
                set.setString(2, r); // the term is this resource's (it may advance it)
                set.execute();
                ins.setString(1, r);
                ins.setLong(2, term);
                ins.setInt(3, worker);
                ins.executeUpdate();
                committing = true;
                c.commit();
                committed.get(r).increment();
            } catch (SQLException e) {
                try {
                    c.rollback();
                } catch (SQLException ignored) {
                    // connection gone
                }
                throw e;
            }
        } catch (SQLException e) {
            if ("FL001".equals(e.getSQLState())) {
                rejected.get(r + "/trigger").increment();
                String detail = e instanceof org.postgresql.util.PSQLException p && p.getServerErrorMessage() != null
                        ? p.getServerErrorMessage().getDetail()
                        : null;
                assertThat(detail).as("trigger rejection audited via dblink").contains("audited=t");
            } else if (committing) {
                unknown.get(r).increment();
            } else {
                rawTerminated.get(r).increment(); // terminated by an advance: rolled back, not a fence rejection
            }
        }
    }
}
