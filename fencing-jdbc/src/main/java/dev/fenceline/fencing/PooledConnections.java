package dev.fenceline.fencing;

import dev.fenceline.db.Databases;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The writer's connections from the application's pool: one borrowed for a transaction, or a fresh one for each step
 * that stands alone (entering, auditing, reading a mark), tried again on another when the pooled one turns out dead
 * (an advance terminates the sessions of older terms, and a pool hands them out until it notices).
 */
final class PooledConnections {
    private static final Logger log = LoggerFactory.getLogger(PooledConnections.class);
    private static final Settings SETTINGS = Databases.settings();

    private final DataSource dataSource;

    PooledConnections(DataSource dataSource) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /** How many pooled connections a step tries before it gives up on finding a live one. */
    static final int ENTER_ATTEMPTS = 16;

    /** A step on one connection. Its result is never null: a step with nothing to return says so some other way. */
    @FunctionalInterface
    interface SqlFunction<T> {
        T apply(Connection c) throws SQLException;
    }

    /**
     * Runs {@code f} on a pooled connection; when that connection turns out dead (e.g. terminated by an advance while
     * it held the fence lock of an older term), tries another, a bounded number of times.
     * Other SQL failures are thrown as they are.
     */
    <T> T withFreshConnection(String what, SqlFunction<T> f) throws SQLException {
        return withFreshConnection(what, ENTER_ATTEMPTS, f);
    }

    <T> T withFreshConnection(String what, int attempts, SqlFunction<T> f) throws SQLException {
        @Nullable SQLException last = null;
        for (int i = 0; i < attempts; i++) {
            Connection c;
            try {
                c = dataSource.getConnection();
            } catch (SQLException e) {
                throw new FenceUnavailableException("could not get a connection to " + what + ": " + e.getMessage(), e);
            }
            try {
                return f.apply(c);
            } catch (SQLException e) {
                if (!SqlStates.isConnectionFailure(e)) {
                    throw e;
                }
                last = e;
            } catch (org.jooq.exception.DataAccessException e) {
                SQLException s = SqlStates.findSqlException(e);
                if (s == null) {
                    throw e;
                }
                if (!SqlStates.isConnectionFailure(s)) {
                    throw s;
                }
                last = s;
            } finally {
                closeQuietly(c);
            }
        }
        // Callers pass at least one attempt (ENTER_ATTEMPTS, or connectionRecheckAttempts: 1 to 10), and a pass
        // that neither returned nor threw set last.
        throw Objects.requireNonNull(last, "attempts must be at least 1");
    }

    Connection borrow(FencingToken token) {
        try {
            return dataSource.getConnection();
        } catch (SQLException e) {
            throw new FenceUnavailableException("could not get a connection for " + token + ": " + e.getMessage(), e);
        }
    }

    static DSLContext dsl(Connection c) {
        return DSL.using(c, SQLDialect.POSTGRES, SETTINGS);
    }

    static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // connection already broken: the server rolled back (or, during COMMIT, the outcome is unknown)
        }
    }

    static void resetAutoCommit(Connection c) {
        try {
            c.setAutoCommit(true);
        } catch (SQLException ignored) {
            // broken connection: the pool evicts it
        }
    }

    static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (SQLException e) {
            log.debug("closing a connection failed", e);
        }
    }
}
