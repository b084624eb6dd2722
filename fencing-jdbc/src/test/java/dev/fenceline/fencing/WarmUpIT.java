package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.AMOUNT;
import static dev.fenceline.fencing.Fixtures.ID;
import static dev.fenceline.fencing.Fixtures.PAYMENT;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import dev.fenceline.testkit.junit.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The warm start touches nothing another writer or a DBA could see. */
@ExtendWith(PostgresExtension.class)
class WarmUpIT {
    static final String TRACES = "SELECT (SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = 'settlement')"
            + " || '/' || (SELECT count(*) FROM fencing.term_history) || '/' || (SELECT count(*) FROM fencing.rejected_write)"
            + " || '/' || (SELECT count(*) FROM fencing.entered_transactions) || '/' || (SELECT count(*) FROM payment)";

    @Test
    void warmingUpWritesNothingMovesNoMarkAndLeavesTheLeadersSessionAlive(TestDatabase db) {
        Fixtures.migrate(db);
        Fixtures.createProtectedPaymentTable(db, "settlement");
        try (HikariDataSource leaderPool = Fixtures.pool(db, 1, "leader");
             HikariDataSource nextPool = Fixtures.pool(db, 1, "next-leader")) {
            FencedWriter leader = FencedWriter.create(leaderPool, FencedWriterConfig.defaults());
            FencingToken token = FencingToken.of("settlement", 3, "a");
            leader.transaction(token, ctx -> ctx.insertInto(PAYMENT).set(ID, 1L).set(AMOUNT, 5L).execute());
            long leaderPid = leader.transaction(token, ctx -> ctx.dsl().fetchSingle("SELECT pg_backend_pid()")
                    .get(0, Long.class));
            String before = Fixtures.text(db, TRACES);

            FencedWriter next = FencedWriter.create(nextPool, FencedWriterConfig.defaults());
            assertThat(next.warmUp("settlement")).isPositive();

            assertThat(Fixtures.text(db, TRACES)).isEqualTo(before);
            assertThat(count(db, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid <> "
                    + leaderPid)).as("no advisory lock outlives the warm-up").isZero();
            // the current leader was not disturbed: same server session, still alive, still commits
            long pidAfter = leader.transaction(token, ctx -> {
                ctx.insertInto(PAYMENT).set(ID, 2L).set(AMOUNT, 6L).execute();
                return ctx.dsl().fetchSingle("SELECT pg_backend_pid()").get(0, Long.class);
            });
            assertThat(pidAfter).isEqualTo(leaderPid);
            // and the warmed writer's first transaction at the next term commits as usual
            next.transaction(FencingToken.of("settlement", 4, "b"),
                    ctx -> ctx.insertInto(PAYMENT).set(ID, 3L).set(AMOUNT, 7L).execute());
            assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 3")).isEqualTo(4);
            assertThat(count(db, "SELECT count(*) FROM fencing.rejected_write")).isZero();
        }
    }

    @Test
    void anAdvanceAskedForWhileWarmingUpIsRefusedAndTerminatesNoOne(PostgresServer server) throws Exception {
        try (TestDatabase db = server.createDatabase("warm_up_refused")) {
            Fixtures.migrate(db);
            Fixtures.createProtectedPaymentTable(db, "settlement");
            refusesTheAdvance(db);
        }
    }

    @Test
    void aWarmUpSettingLeftOnAServerSessionByAnEarlierTransactionDoesNotStopItsNextAdvance(PostgresServer server)
            throws Exception {
        try (TestDatabase db = server.createDatabase("warm_up_left_over")) {
            Fixtures.migrate(db);
            Fixtures.createProtectedPaymentTable(db, "settlement");
            advancesDespiteALeftOverSetting(db);
        }
    }

    private static void advancesDespiteALeftOverSetting(TestDatabase db) throws Exception {
        // What another client of a transaction pooler could leave on the server session: a session-level value, the
        // old "on" or the marker of a transaction that has ended.
        String[] leftOver = {"SET fencing.warm_up = 'on'",
                "SELECT set_config('fencing.warm_up', fencing.warm_up_token(), false)"};
        try (HikariDataSource pool = Fixtures.pool(db, 1, "pooled")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            long term = 1;
            for (String poison : leftOver) {
                String left;
                try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
                    st.execute(poison);
                    try (var rs = st.executeQuery("SHOW fencing.warm_up")) {
                        rs.next();
                        left = rs.getString(1);
                    }
                }
                long id = term;
                writer.transaction(FencingToken.of("settlement", term, "a"),
                        ctx -> ctx.insertInto(PAYMENT).set(ID, id).set(AMOUNT, 5L).execute());
                assertThat(count(db, "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = 'settlement'"))
                        .as("advanced despite %s", poison).isEqualTo(term);
                try (Connection c = pool.getConnection(); Statement st = c.createStatement();
                     var rs = st.executeQuery("SHOW fencing.warm_up")) {
                    rs.next();
                    assertThat(rs.getString(1)).as("the same server session, setting still there").isEqualTo(left);
                }
                term++;
            }
        }
    }

    private static void refusesTheAdvance(TestDatabase db) throws Exception {
        try (HikariDataSource leaderPool = Fixtures.pool(db, 1, "leader");
             Connection next = Fixtures.connect(db)) {
            FencedWriter leader = FencedWriter.create(leaderPool, FencedWriterConfig.defaults());
            FencingToken token = FencingToken.of("settlement", 3, "a");
            long leaderPid = leader.transaction(token, ctx -> {
                ctx.insertInto(PAYMENT).set(ID, 1L).set(AMOUNT, 5L).execute();
                return ctx.dsl().fetchSingle("SELECT pg_backend_pid()").get(0, Long.class);
            });
            String before = Fixtures.text(db, TRACES);

            // Both ways to ask for the advance: fencing.enter(), and a write at the newer term (the guard's entering).
            for (String[] advance : new String[][] {{"SELECT fencing.enter('settlement', 4, 'b')"},
                    {"SET LOCAL fencing.term = '4'", "SET LOCAL fencing.resource = 'settlement'",
                            "INSERT INTO payment (id, amount) VALUES (40, 1)"}}) {
                next.setAutoCommit(false);
                try (Statement st = next.createStatement()) {
                    st.execute("SELECT set_config('fencing.warm_up', fencing.warm_up_token(), true)");
                    for (int i = 0; i < advance.length - 1; i++) {
                        st.execute(advance[i]);
                    }
                    String enter = advance[advance.length - 1];
                    assertThatThrownBy(() -> st.execute(enter)).as(enter)
                            .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL012"));
                } finally {
                    next.rollback();
                    next.setAutoCommit(true);
                }
            }

            assertThat(Fixtures.text(db, TRACES)).as("mark/term history/audit/entered transactions/rows").isEqualTo(before);
            assertThat(count(db, "SELECT count(*) FROM pg_stat_activity WHERE pid = " + leaderPid))
                    .as("the leader's session is alive").isOne();
            long pidAfter = leader.transaction(token, ctx -> {
                ctx.insertInto(PAYMENT).set(ID, 2L).set(AMOUNT, 6L).execute();
                return ctx.dsl().fetchSingle("SELECT pg_backend_pid()").get(0, Long.class);
            });
            assertThat(pidAfter).isEqualTo(leaderPid);
        }
    }
}
