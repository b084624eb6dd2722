package dev.fenceline.sample.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/** A small HikariCP pool plus the read-only queries the CLI needs. */
public final class SampleDatabase implements AutoCloseable {
    private final HikariDataSource ds;
    private final String jdbcUrl;

    private SampleDatabase(HikariDataSource ds, String jdbcUrl) {
        this.ds = ds;
        this.jdbcUrl = jdbcUrl;
    }

    public static SampleDatabase open(
            String jdbcUrl, String user, String password, String applicationName, int poolSize) {
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl(jdbcUrl);
        if (user != null && !user.isBlank()) {
            c.setUsername(user);
        }
        if (password != null && !password.isEmpty()) {
            c.setPassword(password);
        }
        c.setPoolName("fenceline-" + applicationName);
        c.setMaximumPoolSize(poolSize);
        c.setMinimumIdle(Math.min(1, poolSize));
        c.setConnectionTimeout(5_000);
        c.setValidationTimeout(2_000);
        c.setInitializationFailTimeout(5_000);
        c.addDataSourceProperty("ApplicationName", applicationName);
        c.addDataSourceProperty("connectTimeout", "5");
        c.addDataSourceProperty("tcpKeepAlive", "true");
        try {
            return new SampleDatabase(new HikariDataSource(c), jdbcUrl);
        } catch (RuntimeException e) {
            String state = sqlState(e);
            String detail = (state == null ? "" : "SQLSTATE " + state + ": ") + rootMessage(e);
            throw startFailure(
                    e,
                    "cannot connect to PostgreSQL at " + redact(jdbcUrl) + ": " + detail,
                    () -> new IllegalStateException(
                            "PostgreSQL at " + redact(jdbcUrl) + " refused the connection: " + detail
                                    + " (not retried: waiting does not fix credentials, a missing database or role, or a bug)",
                            e));
        }
    }

    /** A start check run by {@link #checked}: queries that fail with what they found, or with the connection. */
    @FunctionalInterface
    public interface StartCheck {
        void run(SampleDatabase db) throws SQLException;
    }

    /**
     * This database once {@code check} passed; closed when it fails. A failure is classified like {@link #open}'s:
     * the server became unreachable meanwhile (a pooler just restarted may refuse the pool's other connections after
     * the first got through) is an {@link UnreachableException}, which the start wait retries; what the check found
     * (an unknown election, a missing schema) is thrown as it is.
     */
    public SampleDatabase checked(StartCheck check) {
        try {
            check.run(this);
            return this;
        } catch (SQLException | RuntimeException e) {
            close();
            throw startFailure(
                    e,
                    "PostgreSQL at " + redact(jdbcUrl) + " became unreachable during the start checks: "
                            + e.getMessage(),
                    () -> e instanceof RuntimeException r
                            ? r
                            : new IllegalStateException(
                                    "start checks failed on " + redact(jdbcUrl) + ": " + e.getMessage(), e));
        }
    }

    /** The one decision between "wait" and "fail now" at start, for connecting and for the start checks alike. */
    private static RuntimeException startFailure(
            Throwable e, String unreachableMessage, java.util.function.Supplier<RuntimeException> notRetried) {
        return isUnreachable(e) ? new UnreachableException(unreachableMessage, e) : notRetried.get();
    }

    /**
     * The server could not be reached or is not accepting connections for now (down, restarting, a pooler without a
     * server behind it, the database closed to new connections): callers may retry. Anything else — wrong password,
     * unknown role or database — is not this exception: waiting would not fix it.
     */
    public static final class UnreachableException extends IllegalStateException {
        public UnreachableException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Whether a failure to connect is one that goes away by itself: SQLSTATE class 08 (connection exception: refused,
     * reset, a pooler that cannot reach its server), 57P03 (the server is starting up or shutting down), 55000 (what
     * PostgreSQL answers while the database is closed to connections, e.g. ALTER DATABASE .. ALLOW_CONNECTIONS false),
     * or, without any SQLSTATE, a socket that could not connect or timed out. Authentication (class 28), an unknown
     * database (3D000) and every other error are not.
     */
    public static boolean isUnreachable(Throwable failure) {
        String state = sqlState(failure);
        if (state != null) {
            return state.startsWith("08") || state.equals("57P03") || state.equals("55000");
        }
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof java.net.ConnectException
                    || t instanceof java.net.SocketTimeoutException
                    || t instanceof java.net.NoRouteToHostException) {
                return true;
            }
        }
        return false;
    }

    /** The SQLSTATE of the first SQLException in the cause chain that has one, or null. */
    public static String sqlState(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql && sql.getSQLState() != null) {
                return sql.getSQLState();
            }
        }
        return null;
    }

    public DataSource dataSource() {
        return ds;
    }

    public String jdbcUrl() {
        return jdbcUrl;
    }

    @Override
    public void close() {
        ds.close();
    }

    /** True when the fencing schema exists and resource {@code name} is registered in it. */
    public boolean isResourceRegistered(String name) throws SQLException {
        try (Connection c = ds.getConnection()) {
            if (!schemaTableExists(c, "fencing", "high_water_mark")) {
                return false;
            }
            try (PreparedStatement ps =
                    c.prepareStatement("SELECT 1 FROM fencing.high_water_mark WHERE resource = ?")) {
                ps.setString(1, name);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next();
                }
            }
        }
    }

    public List<String> registeredResources() throws SQLException {
        List<String> out = new ArrayList<>();
        try (Connection c = ds.getConnection()) {
            if (!schemaTableExists(c, "fencing", "high_water_mark")) {
                return out;
            }
            try (PreparedStatement ps =
                            c.prepareStatement("SELECT resource FROM fencing.high_water_mark ORDER BY resource");
                    ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    public boolean isSampleSchemaMigrated() throws SQLException {
        try (Connection c = ds.getConnection()) {
            return schemaTableExists(c, "settlement", "payment")
                    && schemaTableExists(c, "settlement", "settlement_batch");
        }
    }

    /** Highest accepted term of a resource (0 when registered but never advanced; -1 when unknown). */
    public long mark(String resource) throws SQLException {
        try (Connection c = ds.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = ?")) {
            ps.setString(1, resource);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : -1;
            }
        }
    }

    public record Mark(String resource, long highestAccepted, String leaderId, String updatedAt) {}

    public List<Mark> marks() throws SQLException {
        List<Mark> out = new ArrayList<>();
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT resource, highest_accepted, leader_id, updated_at FROM fencing.high_water_mark ORDER BY resource");
                ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                java.sql.Timestamp ts = rs.getTimestamp(4);
                out.add(new Mark(
                        rs.getString(1),
                        rs.getLong(2),
                        rs.getString(3),
                        ts == null ? null : ts.toInstant().toString()));
            }
        }
        return out;
    }

    /** pending, settled, batches, rejected_writes (for the resource). */
    public Map<String, Long> counts(String resource) throws SQLException {
        Map<String, Long> m = new LinkedHashMap<>();
        try (Connection c = ds.getConnection()) {
            try (PreparedStatement ps = c.prepareStatement(
                            "SELECT count(*) FILTER (WHERE status = 'PENDING'), count(*) FILTER (WHERE status = 'SETTLED') FROM settlement.payment");
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                m.put("pending", rs.getLong(1));
                m.put("settled", rs.getLong(2));
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM settlement.settlement_batch");
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                m.put("batches", rs.getLong(1));
            }
            try (PreparedStatement ps =
                    c.prepareStatement("SELECT count(*) FROM fencing.rejected_write WHERE resource = ?")) {
                ps.setString(1, resource);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    m.put("rejected_writes", rs.getLong(1));
                }
            }
        }
        return m;
    }

    static boolean schemaTableExists(Connection c, String schema, String table) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
            ps.setString(1, schema + "." + table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    public static String redact(String jdbcUrl) {
        return jdbcUrl == null ? null : jdbcUrl.replaceAll("(?i)(password=)[^&]*", "$1***");
    }

    public static String rootMessage(Throwable t) {
        Throwable r = t;
        while (r.getCause() != null && r.getCause() != r) {
            r = r.getCause();
        }
        String msg = r.getMessage();
        return msg == null ? r.getClass().getSimpleName() : msg;
    }
}
