package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.AMOUNT;
import static dev.fenceline.fencing.Fixtures.ID;
import static dev.fenceline.fencing.Fixtures.PAYMENT;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The warm start touches nothing another writer or a DBA could see. */
@ExtendWith(PostgresExtension.class)
class WarmUpIT {
    static final String TRACES =
            "SELECT (SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = 'settlement')"
                    + " || '/' || (SELECT count(*) FROM fencing.term_history) || '/' || (SELECT count(*) FROM fencing.rejected_write)"
                    + " || '/' || (SELECT count(*) FROM fencing.entered_transactions) || '/' || (SELECT count(*) FROM payment)"
                    + " || '/' || (SELECT count(*) FROM fencing.high_water_mark)";

    @Test
    void warmingUpWritesNothingMovesNoMarkAndLeavesTheLeadersSessionAlive(TestDatabase db) {
        Fixtures.migrate(db);
        Fixtures.createProtectedPaymentTable(db, "settlement");
        try (HikariDataSource leaderPool = Fixtures.pool(db, 1, "leader");
                HikariDataSource nextPool = Fixtures.pool(db, 1, "next-leader")) {
            FencedWriter leader = FencedWriter.create(leaderPool, FencedWriterConfig.defaults());
            FencingToken token = FencingToken.of("settlement", 3, "a");
            leader.transaction(
                    token,
                    ctx -> ctx.insertInto(PAYMENT).set(ID, 1L).set(AMOUNT, 5L).execute());
            long leaderPid = leader.transaction(
                    token,
                    ctx -> ctx.dsl().fetchSingle("SELECT pg_backend_pid()").get(0, Long.class));
            String before = Fixtures.text(db, TRACES);

            FencedWriter next = FencedWriter.create(nextPool, FencedWriterConfig.defaults());
            assertThat(next.warmUp("settlement")).isPositive();

            assertThat(Fixtures.text(db, TRACES)).isEqualTo(before);
            assertThat(count(db, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid <> " + leaderPid))
                    .as("no advisory lock outlives the warm-up")
                    .isZero();
            // the current leader was not disturbed: same server session, still alive, still commits
            long pidAfter = leader.transaction(token, ctx -> {
                ctx.insertInto(PAYMENT).set(ID, 2L).set(AMOUNT, 6L).execute();
                return ctx.dsl().fetchSingle("SELECT pg_backend_pid()").get(0, Long.class);
            });
            assertThat(pidAfter).isEqualTo(leaderPid);
            // and the warmed writer's first transaction at the next term commits as usual
            next.transaction(
                    FencingToken.of("settlement", 4, "b"),
                    ctx -> ctx.insertInto(PAYMENT).set(ID, 3L).set(AMOUNT, 7L).execute());
            assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 3"))
                    .isEqualTo(4);
            assertThat(count(db, "SELECT count(*) FROM fencing.rejected_write")).isZero();
        }
    }

    /**
     * The warm-up runs a whole advance, of a resource of its own, so that the new leader's first advance finds every
     * statement of it planned on the server session; the warm-up's savepoint takes that resource away again. What
     * shows that the advance ran: the identity of fencing.term_history moved (a sequence does not roll back), while no
     * history row and no second mark row are left.
     */
    @Test
    void warmingUpRunsAnAdvanceOfAResourceOfItsOwnAndLeavesNeitherItsRowNorItsHistory(PostgresServer server)
            throws Exception {
        try (TestDatabase db = server.createDatabase("warm_up_advance")) {
            Fixtures.migrate(db);
            Fixtures.createProtectedPaymentTable(db, "settlement");
            String historyIds =
                    "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing.term_history_id_seq";
            long before = count(db, historyIds);
            try (HikariDataSource pool = Fixtures.pool(db, 1, "warming")) {
                FencedWriter.create(pool, FencedWriterConfig.defaults()).warmUp("settlement");
            }
            assertThat(count(db, historyIds))
                    .as("one term_history row was written and rolled back")
                    .isEqualTo(before + 1);
            assertThat(count(db, "SELECT count(*) FROM fencing.term_history")).isZero();
            assertThat(count(db, "SELECT count(*) FROM fencing.high_water_mark"))
                    .as("only the real resource")
                    .isOne();
        }
    }
}
