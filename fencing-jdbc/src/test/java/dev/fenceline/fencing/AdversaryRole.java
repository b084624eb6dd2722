package dev.fenceline.fencing;

import dev.fenceline.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An ordinary application login: a member of {@code fencing_app}, not a superuser, with plain table privileges on the
 * test tables. Every attack on the fence in the "every writer" tests is made through its own connections, so nothing
 * relies on powers a deployed service would not have. Roles are cluster-wide: each instance has its own name and
 * {@link #close()} removes it (with any prepared transaction left in the test database).
 *
 * <p>Every statement that could wait on a lock gets {@link #QUERY_TIMEOUT_SECONDS}: a wait that the fence should
 * have bounded then fails the test (SQLSTATE 57014) instead of blocking the suite. That timeout is a safety net,
 * never the assertion.
 */
final class AdversaryRole implements AutoCloseable {
    /** Far above any advance_timeout used here (1 s); only reached when something waits without a bound. */
    static final int QUERY_TIMEOUT_SECONDS = 30;

    static final int FENCE_LOCK_NAMESPACE = 1178946115;
    private static final AtomicInteger COUNTER = new AtomicInteger();

    private final TestDatabase db;
    private final String name;

    private AdversaryRole(TestDatabase db, String name) {
        this.db = db;
        this.name = name;
    }

    /** Creates the login role (trust authentication on loopback: no password). */
    static AdversaryRole create(TestDatabase db) {
        String name = "fence_adversary_" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
        Fixtures.sql(db, "CREATE ROLE " + name + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE IN ROLE fencing_app");
        return new AdversaryRole(db, name);
    }

    String name() {
        return name;
    }

    /** A new connection as this role (autocommit on, lock_timeout 0 as in psql). */
    Connection connect(String applicationName) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", name);
        p.setProperty("ApplicationName", applicationName);
        return DriverManager.getConnection(db.jdbcUrl(), p);
    }

    void grantWrites(String... tables) {
        for (String t : tables) {
            Fixtures.sql(db, "GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON " + t + " TO " + name);
        }
    }

    /**
     * A new resource whose mark is {@code mark} (held by {@code leaderId}) and a protected table {@code table (id
     * bigint PRIMARY KEY, note text)} with rows 1..3 (inserted before the table is protected), writable by this role.
     * The mark is set by {@code fencing.enter} in a transaction of its own (a superuser's, committed at once), so no
     * transaction holds the fence lock afterwards.
     */
    void protectedTable(String table, String resource, long mark, String leaderId) {
        Fixtures.sql(
                db,
                "CREATE TABLE " + table + " (id bigint PRIMARY KEY, note text)",
                "INSERT INTO " + table + " (id, note) SELECT g, 'initial' FROM generate_series(1, 3) g",
                "SELECT fencing.protect_table('" + table + "', '" + resource + "')",
                "SELECT fencing.enter('" + resource + "', " + mark + ", '" + leaderId + "')");
        grantWrites(table);
    }

    /** A statement with the safety-net query timeout. */
    static Statement statement(Connection c) throws SQLException {
        Statement s = c.createStatement();
        s.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
        return s;
    }

    /** Runs the statements one by one on {@code c} (no transaction of its own: the caller's BEGIN or autocommit). */
    static void execute(Connection c, String... statements) throws SQLException {
        try (Statement s = statement(c)) {
            for (String sql : statements) {
                s.execute(sql);
            }
        }
    }

    /** Runs the statements as one JDBC transaction on {@code c}; rolls back (when still connected) and rethrows on error. */
    static void inTransaction(Connection c, String... statements) throws SQLException {
        c.setAutoCommit(false);
        try (Statement s = statement(c)) {
            for (String sql : statements) {
                s.execute(sql);
            }
            c.commit();
        } catch (SQLException e) {
            if (!c.isClosed()) {
                try {
                    c.rollback();
                } catch (SQLException lost) {
                    e.addSuppressed(lost);
                }
            }
            throw e;
        } finally {
            try {
                if (!c.isClosed()) {
                    c.setAutoCommit(true);
                }
            } catch (SQLException broken) {
                // The backend is gone (e.g. terminated by an advance): the caller sees the statement's own error.
            }
        }
    }

    /** The first column of the first row of a query on {@code c}. */
    static String query(Connection c, String sql) throws SQLException {
        try (Statement s = statement(c);
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    static long backendPid(Connection c) throws SQLException {
        return Long.parseLong(query(c, "SELECT pg_backend_pid()"));
    }

    static long mark(TestDatabase db, String resource) {
        return Fixtures.count(
                db, "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = '" + resource + "'");
    }

    static boolean backendAlive(TestDatabase db, long pid) {
        return Fixtures.count(db, "SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid) > 0;
    }

    /** The SQLSTATE of the first {@link SQLException} in the cause chain (null: none). */
    static String sqlState(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof SQLException e && e.getSQLState() != null) {
                return e.getSQLState();
            }
        }
        return null;
    }

    /** A lost connection: the backend was terminated (57P01) or the socket is gone (class 08). */
    static boolean connectionLost(Throwable t) {
        String state = sqlState(t);
        return state != null && (state.equals("57P01") || state.startsWith("08"));
    }

    /** Rolls back, as the superuser, every prepared transaction of the test database: none may outlive a test. */
    static void rollbackPreparedTransactions(TestDatabase db) {
        List<String> gids = new ArrayList<>();
        try (Connection c = Fixtures.connect(db);
                Statement s = c.createStatement()) {
            try (ResultSet rs =
                    s.executeQuery("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()")) {
                while (rs.next()) {
                    gids.add(rs.getString(1));
                }
            }
            for (String gid : gids) {
                s.execute("ROLLBACK PREPARED '" + gid.replace("'", "''") + "'");
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot roll back prepared transactions " + gids + " of " + db, e);
        }
    }

    /** Rolls back its prepared transactions, ends its sessions and drops the role. */
    @Override
    public void close() {
        rollbackPreparedTransactions(db);
        Fixtures.sql(
                db,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + name + "'",
                "DROP OWNED BY " + name,
                "DROP ROLE IF EXISTS " + name);
    }
}
