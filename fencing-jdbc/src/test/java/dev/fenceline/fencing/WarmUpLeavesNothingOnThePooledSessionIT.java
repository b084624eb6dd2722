package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.execute;
import static dev.fenceline.fencing.AdversaryRole.mark;
import static dev.fenceline.fencing.AdversaryRole.query;
import static dev.fenceline.fencing.AdversaryRole.sqlState;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.testkit.PgBouncer;
import java.sql.Connection;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link FencedWriter#warmUp(String)} leaves nothing on the pooled server session that a later use of it could count
 * on: no fencing setting, no fence lock, no temporary relation, no transaction listed as entered; a term a previous
 * transaction left on the session is not let through; behind PgBouncer in transaction mode the next client finds
 * nothing either. An unfenced write on that session afterwards is rejected (FL002) and audited. The pools log in as an
 * ordinary {@code fencing_app} login ({@link AdversaryRole}), except the one behind PgBouncer, which logs in as the
 * pooler's user. Each test has its own resource and protected table.
 *
 * <p>What the warm start touches that another writer or a DBA could see: {@link WarmUpIT}.
 */
class WarmUpLeavesNothingOnThePooledSessionIT extends AdversaryWriterScene {

    /**
     * What a server session carries that could count for a later transaction on it: "term|resource|advisory
     * locks|temporary relations" (the warm-up writes to a temporary table in a transaction it rolls back).
     */
    private static String sessionLeftovers(Connection c) throws SQLException {
        return query(
                c,
                "SELECT coalesce(current_setting('fencing.term', true), '')"
                        + " || '|' || coalesce(current_setting('fencing.resource', true), '')"
                        + " || '|' || (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())"
                        + " || '|' || (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema())");
    }

    /** Transactions holding the resource's fence lock now (the view the next advance's victims are listed in). */
    private long enteredTransactions(String resource) {
        return count(db, "SELECT count(*) FROM fencing.entered_transactions WHERE resource = '" + resource + "'");
    }

    /**
     * After {@code warmUp}, the pool's only session is handed to code that does not use the writer: it must find no
     * fencing setting, no fence lock and no temporary relation, no transaction of it may be listed as entered, and an
     * unfenced write is rejected (FL002) and audited once.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"mark-zero", "unknown", "held-by-another-leader"})
    void warmUpLeavesNothingOnThePooledSessionForALaterUnfencedUse(String kind) throws Exception {
        String table = "warm_" + kind.replace('-', '_') + "_" + TABLES.incrementAndGet();
        String resource = resourceOf(table);
        String warmed = resource;
        switch (kind) {
            case "mark-zero" ->
                Fixtures.sql(
                        db,
                        "SELECT fencing.register_resource('" + resource + "')",
                        "CREATE TABLE " + table + " (id bigint PRIMARY KEY, note text)",
                        "INSERT INTO " + table + " VALUES (1, 'initial')",
                        "SELECT fencing.protect_table('" + table + "', '" + resource + "')",
                        "GRANT SELECT, INSERT, UPDATE, DELETE ON " + table + " TO " + adversary.name());
            case "unknown" -> {
                adversary.protectedTable(table, resource, 5, "a");
                warmed = resource + "-unregistered";
            }
            default -> adversary.protectedTable(table, resource, 5, "a");
        }
        long markBefore = mark(db, resource);
        long historyBefore = count(db, "SELECT count(*) FROM fencing.term_history");
        try (HikariDataSource pool = pool("warmed")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            assertThat(writer.warmUp(warmed)).isPositive();
            try (Connection c = pool.getConnection()) {
                assertThat(sessionLeftovers(c))
                        .as("term|resource|advisory locks|temporary relations on the pooled session")
                        .isEqualTo("||0|0");
                assertThat(enteredTransactions(resource))
                        .as("transactions entered for %s", resource)
                        .isZero();
                Throwable unfenced = catchThrowable(
                        () -> execute(c, "UPDATE " + table + " SET note = 'unfenced after warm-up' WHERE id = 1"));
                assertThat(sqlState(unfenced)).as("%s", unfenced).isEqualTo("FL002");
            }
        }
        assertThat(note(table, 1)).isEqualTo("initial");
        assertThat(mark(db, resource)).isEqualTo(markBefore);
        assertThat(count(db, "SELECT count(*) FROM fencing.term_history")).isEqualTo(historyBefore);
        assertThat(count(db, "SELECT count(*) FROM fencing.high_water_mark WHERE resource = '" + warmed + "'"))
                .as("rows of the warmed resource")
                .isEqualTo(kind.equals("unknown") ? 0 : 1);
        assertThat(count(db, "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + resource + "'"))
                .as("audit rows: the unfenced write only")
                .isEqualTo(1);
    }

    /**
     * Warm-up of a writer whose previous transaction left a session setting behind through the connection: the
     * warm-up's term (1) and resource are transaction-local and do not replace or remove what the session had.
     */
    @Test
    void warmUpDoesNotLetAStaleSessionTermThroughOnThePooledSession() throws Exception {
        String table = table("warm_after_set");
        String resource = resourceOf(table);
        FencingToken t5 = FencingToken.of(resource, 5, "a");
        try (HikariDataSource pool = pool("leader-a")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            writer.run(
                    t5,
                    ctx -> execute(
                            ctx.connection(), "SET fencing.term = '5'", "SET fencing.resource = '" + resource + "'"));
            writer.warmUp(resource);
            advance(resource, 6);
            Throwable late = catchThrowable(() ->
                    writer.run(t5, ctx -> update(ctx.connection(), table, 1, "term 5 after 6, after a warm-up", 5)));
            assertThat(late).isInstanceOf(StaleTermException.class);
        }
        assertThat(note(table, 1)).isEqualTo("initial");
        assertThat(audits(resource, 5)).isEqualTo(1);
    }

    /**
     * Behind PgBouncer in transaction mode (one server session shared by every client), the warm-up leaves nothing
     * on the server session for the next client: no setting, no fence lock, no temporary relation.
     */
    @Test
    void warmUpBehindATransactionPoolerLeavesNothingForTheNextClient() throws Exception {
        String table = table("warm_bouncer");
        String resource = resourceOf(table);
        try (PgBouncer bouncer = PgBouncer.start(
                        db.server(),
                        PgBouncer.Options.defaults().poolMode("transaction").defaultPoolSize(1));
                HikariDataSource pool = Databases.dataSource(DatabaseConfig.builder(bouncer.jdbcUrl(db.name()))
                        .username(bouncer.user())
                        .password(bouncer.password())
                        .maximumPoolSize(1)
                        .applicationName("warmed")
                        .poolName("warmed-bouncer")
                        .build())) {
            FencedWriter writer =
                    FencedWriter.create(pool, FencedWriterConfig.builder().build());
            long warmedPid = writer.transaction(
                    FencingToken.of(resource, 5, "a"),
                    ctx -> ctx.dsl().fetchSingle("SELECT pg_backend_pid()").get(0, Long.class));
            writer.warmUp(resource);
            try (Connection next = bouncer.connection(db.name())) {
                assertThat(AdversaryRole.backendPid(next))
                        .as("the one server session")
                        .isEqualTo(warmedPid);
                assertThat(sessionLeftovers(next))
                        .as("term|resource|advisory locks|temporary relations for the next client")
                        .isEqualTo("||0|0");
                Throwable unfenced = catchThrowable(
                        () -> execute(next, "UPDATE " + table + " SET note = 'next client, unfenced' WHERE id = 1"));
                assertThat(sqlState(unfenced)).as("%s", unfenced).isEqualTo("FL002");
            }
        }
        assertThat(note(table, 1)).isEqualTo("initial");
        assertThat(mark(db, resource)).isEqualTo(5);
    }
}
