package dev.fenceline.fencing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.testkit.PgBouncer;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Behind PgBouncer in transaction mode, clients logged in as the same role share server sessions, and a session-level
 * {@code SET} one client sends stays on the server session for whichever client's transaction runs there next. With
 * a pool of ONE server session, another client X leaves a setting there; then the leader's writer on its defaults
 * runs its new term's first transaction (the one that advances the mark) and a normal transaction through the same
 * pooler. Both must commit: every setting that would change the leader's transaction is the writer's to decide, in
 * the transaction.
 *
 * <p>Each case has its own resource (mark 5, leader a) and table, and starts from fresh server sessions (the pooler's
 * are terminated before it), so a setting of one case cannot reach the next.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PooledSessionLeftoversIT {
    private static final AtomicInteger NUMBERS = new AtomicInteger();
    /** A 1 ms statement_timeout can cancel even a check that reads it back: tried this many times. */
    private static final int READ_BACK_ATTEMPTS = 50;

    private static final String OUTSIDE_ROLE = "fenceline_leftover_reporting";

    private TestDatabase db;
    private String app;
    private PgBouncer bouncer;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        app = "pooled_leftover_app_" + ProcessHandle.current().pid();
        Fixtures.sql(db, "CREATE ROLE " + app + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE IN ROLE fencing_app");
        // A role the login may SET ROLE to that has none of the fence's rights (a reporting role, say).
        Fixtures.sql(db, "CREATE ROLE " + OUTSIDE_ROLE + " NOLOGIN", "GRANT " + OUTSIDE_ROLE + " TO " + app);
        bouncer = PgBouncer.start(
                db.server(),
                PgBouncer.Options.defaults().poolMode("transaction").defaultPoolSize(1));
    }

    @AfterAll
    void tearDown() {
        if (bouncer != null) {
            bouncer.close();
        }
        if (app != null) {
            Fixtures.sql(
                    db,
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + app + "'",
                    "DROP OWNED BY " + app,
                    "DROP ROLE IF EXISTS " + app,
                    "DROP ROLE IF EXISTS " + OUTSIDE_ROLE);
        }
    }

    /** Another client of the pooler, logged in as the leader's role: the pool's one server session serves it. */
    private Connection pooledClient() throws SQLException {
        return DriverManager.getConnection(bouncer.jdbcUrl(db.name()), app, "");
    }

    private String note(String table, long id) {
        return Fixtures.text(db, "SELECT note FROM " + table + " WHERE id = " + id);
    }

    @ParameterizedTest(name = "SET {0} = {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "default_transaction_read_only | on",
                "statement_timeout             | 1ms",
                "default_transaction_isolation | repeatable read",
                "fencing.term                  | 900",
                "lock_timeout                  | 1ms",
                "role                          | " + OUTSIDE_ROLE
            })
    void aSettingAnotherPoolerClientLeftOnTheOnlyServerSessionDoesNotStopTheLeadersAdvancingTransactionNorItsNextOne(
            String name, String value) throws Exception {
        int n = NUMBERS.incrementAndGet();
        String table = "public.leftover_" + n;
        String resource = "leftover-" + n;
        Fixtures.sql(
                db,
                "CREATE TABLE " + table + " (id bigint PRIMARY KEY, note text)",
                "INSERT INTO " + table + " (id, note) SELECT g, 'initial' FROM generate_series(1, 3) g",
                "SELECT fencing.protect_table('" + table + "', '" + resource + "')",
                "SELECT fencing.enter('" + resource + "', 5, 'a')",
                "GRANT SELECT, INSERT, UPDATE, DELETE ON " + table + " TO " + app);
        bouncer.killServerConnections(db.name()); // a fresh server session: nothing of an earlier case on it

        try (Connection x = pooledClient();
                Statement s = x.createStatement()) {
            s.execute("SET " + name + " = '" + value + "'");
        }
        assertThat(readBack(name))
                .as("client X's setting, left on the pool's one server session")
                .isEqualTo(value);

        try (HikariDataSource pool = Databases.dataSource(DatabaseConfig.builder(bouncer.jdbcUrl(db.name()))
                .username(app)
                .maximumPoolSize(1)
                .applicationName("leader-b")
                .poolName("leftover-leader-" + n)
                .build())) {
            FencedWriter leader = FencedWriter.create(pool, FencedWriterConfig.defaults());
            Throwable advancing = catchThrowable(() -> leader.transaction(
                    FencingToken.of(resource, 6, "b"),
                    ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'b at 6, first' WHERE id = 1")));
            assertThat(advancing)
                    .as(
                            "the leader's first transaction of term 6 (advancing the mark from 5) on the"
                                    + " server session where another client left %s = %s (SQLSTATE %s)",
                            name, value, AdversaryRole.sqlState(advancing))
                    .isNull();
            Throwable next = catchThrowable(() -> leader.transaction(
                    FencingToken.of(resource, 6, "b"),
                    ctx -> ctx.dsl().execute("UPDATE " + table + " SET note = 'b at 6, next' WHERE id = 2")));
            assertThat(next)
                    .as("the leader's next transaction of term 6 (SQLSTATE %s)", AdversaryRole.sqlState(next))
                    .isNull();
        }
        assertThat(AdversaryRole.mark(db, resource)).isEqualTo(6);
        assertThat(note(table, 1)).isEqualTo("b at 6, first");
        assertThat(note(table, 2)).isEqualTo("b at 6, next");
        bouncer.killServerConnections(db.name());
    }

    /** The setting as the pool's one server session has it now, read through the pooler. */
    private String readBack(String name) throws SQLException {
        SQLException last = null;
        for (int i = 0; i < READ_BACK_ATTEMPTS; i++) {
            try (Connection c = pooledClient();
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT current_setting('" + name + "')")) {
                rs.next();
                return rs.getString(1);
            } catch (SQLException e) {
                if (!"57014".equals(e.getSQLState())) {
                    throw e;
                }
                last = e; // canceled by the 1 ms statement_timeout being read back: the setting is there
            }
        }
        throw last;
    }
}
