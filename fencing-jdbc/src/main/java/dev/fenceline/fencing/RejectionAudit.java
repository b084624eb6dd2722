package dev.fenceline.fencing;

import dev.fenceline.db.generated.Routines;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jooq.JSONB;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a refused or failed fenced transaction becomes for the caller, and its audit: a stale term read before the
 * work, the guard's FL001 (with the facts of its DETAIL), a connection lost to the advance of a newer term (found by
 * reading the mark again), the other fence codes ({@link SqlStates}); a rejection the database could not audit itself
 * is recorded with {@code fencing.record_rejection}, once.
 */
final class RejectionAudit {
    private static final Logger log = LoggerFactory.getLogger(RejectionAudit.class);

    private final PooledConnections connections;
    private final FencedWriterConfig config;

    RejectionAudit(PooledConnections connections, FencedWriterConfig config) {
        this.connections = Objects.requireNonNull(connections, "connections");
        this.config = Objects.requireNonNull(config, "config");
    }

    private static final Pattern DETAIL =
            Pattern.compile("resource=(\\S*) offered_term=(\\S*) highest_accepted=(\\S*) audited=(\\S*) table=(.*)");

    /** Thrown inside a transaction whose first statement read a mark above the term; nothing was written. */
    static final class StaleEntering extends RuntimeException {
        private final long mark;

        StaleEntering(long mark) {
            super(null, null, false, false);
            this.mark = mark;
        }
    }

    RuntimeException translate(
            Throwable t, boolean committing, FencingToken token, @Nullable WriteDescription d, Connection c) {
        if (t instanceof Error e) {
            throw e;
        }
        if (t instanceof StaleEntering s) {
            // The first statement read a higher mark; the transaction is rolled back. Audit like a stale enter().
            boolean audited = audit(c, token, s.mark, d);
            return new StaleTermException(
                    token.resource(), token.term(), s.mark, d == null ? null : d.table(), audited, null);
        }
        SQLException sql = SqlStates.findSqlException(t);
        String sqlState = sql == null ? null : sql.getSQLState();
        // sqlState is sql's: where it matches a code below, sql is not null (the checks say so for NullAway).
        if (sql != null && SqlStates.STALE_TERM.equals(sqlState)) {
            // The guard decided (a mark that rose after the first statement read it, the term held by another
            // leader id, or the work set another fencing.term): it audited via dblink if it could.
            return staleFromServer(sql, t, token, d);
        }
        if (SqlStates.NOT_THE_WRITERS_TRANSACTION.equals(sqlState)) {
            // fencing.check_writers_transaction() refused before the COMMIT in the same message: not committed.
            return new IllegalStateException(
                    "fenced work of " + token + " ended the writer's transaction itself and"
                            + " went on in a new one (e.g. COMMIT AND CHAIN, or a COMMIT sent as SQL and more SQL after it):"
                            + " the writer did not commit and rolled back"
                            + " what followed, but what the work wrote before it ended the transaction may have been committed"
                            + " outside the fence's all-or-nothing; the writer owns the transaction",
                    t);
        }
        if (sql != null && SqlStates.NO_TERM.equals(sqlState)) {
            // a write with no term for its table: a table of another resource, or the work ended the writer's
            // transaction and wrote in the next one (the writer's settings end with its transaction)
            Matcher m = detail(sql);
            return new NotFencedException(
                    m != null ? m.group(1) : null, m != null ? m.group(5) : null, sql.getMessage(), t);
        }
        if (sql != null && SqlStates.isFenceCode(sqlState)) {
            return translateEnterFailure(token, sql);
        }
        if (sql != null && SqlStates.isConnectionFailure(sql)) {
            Recheck r = recheck(token);
            if (committing) {
                return new CommitOutcomeUnknownException(
                        token, r == null ? null : r.deposed, r == null ? null : r.mark, t);
            }
            if (r != null && r.deposed) {
                // Terminated by the advance of a newer term: not committed, rejected as a whole. Audit it.
                boolean audited = auditOnFreshConnection(token, r.mark, d);
                return new StaleTermException(
                        token.resource(), token.term(), r.mark, d == null ? null : d.table(), audited, t);
            }
        }
        if (t instanceof RuntimeException re) {
            return re;
        }
        return new FencedWorkException(t);
    }

    /**
     * PostgreSQL raised FL001 (stale term, or the same term held by another leader); its DETAIL says whether it
     * audited the rejection itself (via dblink). If it could not, the writer audits on a fresh connection.
     */
    private StaleTermException staleFromServer(
            SQLException sql, Throwable cause, FencingToken token, @Nullable WriteDescription d) {
        Matcher m = detail(sql);
        long offered = m != null && !m.group(2).isEmpty() ? Long.parseLong(m.group(2)) : token.term();
        long mark = m != null && !m.group(3).isEmpty() ? Long.parseLong(m.group(3)) : -1;
        boolean audited = m != null && m.group(4).startsWith("t");
        String table = m != null && !m.group(5).isEmpty() ? m.group(5) : d == null ? null : d.table();
        if (!audited) {
            audited = auditOnFreshConnection(token, mark, d);
        }
        String resource = m != null ? m.group(1) : token.resource();
        return new StaleTermException(resource, offered, mark, table, audited, cause);
    }

    RuntimeException translateEnterFailure(FencingToken token, SQLException e) {
        return translateEnterFailure(token, e, null);
    }

    RuntimeException translateEnterFailure(FencingToken token, SQLException e, @Nullable WriteDescription d) {
        if (SqlStates.STALE_TERM.equals(e.getSQLState())) {
            // Entering refused the term outright: another leader already holds this very term. Nothing was written.
            return staleFromServer(e, e, token, d);
        }
        return SqlStates.enteringFailure(token, e);
    }

    private record Recheck(boolean deposed, long mark) {}

    /**
     * Asks PostgreSQL on a fresh connection, by reading the mark, whether the token's term was deposed (a higher mark:
     * an advance, which terminates the transactions of older terms holding the fence lock, may be what cut the
     * connection). Reads only: nothing is entered or left on a server session.
     */
    private @Nullable Recheck recheck(FencingToken token) {
        try {
            return connections.withFreshConnection(
                    "re-check the fence of " + token, config.connectionRecheckAttempts(), c -> {
                        Long mark = WriterStatements.readMark(c, token.resource());
                        long m = mark == null ? -1 : mark;
                        return new Recheck(m > token.term(), m);
                    });
        } catch (SQLException | RuntimeException e) {
            log.warn("could not re-check the fence of {} after a lost connection", token, e);
            return null;
        }
    }

    private boolean auditOnFreshConnection(FencingToken token, long mark, @Nullable WriteDescription d) {
        try {
            return connections.withFreshConnection("record a rejection", c -> {
                recordRejection(c, token, mark, d);
                return true;
            });
        } catch (SQLException | RuntimeException e) {
            log.error(
                    "could not record rejection of {} (highest accepted {}) in fencing.rejected_write", token, mark, e);
            return false;
        }
    }

    private static void recordRejection(Connection c, FencingToken token, long mark, @Nullable WriteDescription d) {
        Routines.recordRejection(
                PooledConnections.dsl(c).configuration(),
                token.resource(),
                token.term(),
                mark < 0 ? null : mark,
                token.leaderId(),
                d == null ? null : d.table(),
                d == null ? null : d.operation(),
                d == null ? null : d.businessKey(),
                d == null || d.payloadJson() == null ? null : JSONB.valueOf(d.payloadJson()),
                "stale_term",
                "writer",
                null,
                null);
    }

    /** Audits on {@code c} (autocommit). If {@code c} dies before confirming, the row may or may not exist. */
    boolean audit(Connection c, FencingToken token, long mark, @Nullable WriteDescription d) {
        try {
            recordRejection(c, token, mark, d);
            return true;
        } catch (RuntimeException e) {
            log.error(
                    "could not record rejection of {} (highest accepted {}) in fencing.rejected_write", token, mark, e);
            return false;
        }
    }

    private static @Nullable Matcher detail(SQLException e) {
        if (e instanceof org.postgresql.util.PSQLException p
                && p.getServerErrorMessage() != null
                && p.getServerErrorMessage().getDetail() != null) {
            Matcher m = DETAIL.matcher(p.getServerErrorMessage().getDetail());
            if (m.matches()) {
                return m;
            }
        }
        return null;
    }
}
