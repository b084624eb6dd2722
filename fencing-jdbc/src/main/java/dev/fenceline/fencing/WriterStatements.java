package dev.fenceline.fencing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The statements the writer sends itself, around the work: its first statement ({@link #BEGIN_WRITE}, or with
 * {@link #explicitStart} first where a server session's settings spoiled it), its check of the driver's state and its
 * COMMIT message, the entering of {@link FencedWriter#enter}, and the read of a mark. One per writer: it remembers
 * whether a session's settings ever spoiled its first statement.
 */
final class WriterStatements {
    private static final Logger log = LoggerFactory.getLogger(WriterStatements.class);

    private final FencedWriterConfig config;
    /** {@link #enterStatement(FencedWriterConfig)} for this writer's timeouts. */
    private final String enterStatement;
    /** Isolation, access mode and the writer's statement and lock timeouts, each a utility statement of its own. */
    private final String explicitStart;

    WriterStatements(FencedWriterConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.enterStatement = enterStatement(config);
        this.explicitStart = timeoutsFirst(config);
    }

    /** {@link FencedWriter#enter}'s statement for this writer's timeouts. */
    String enterStatement() {
        return enterStatement;
    }

    /**
     * The writer's first statement in every transaction: {@code fencing.begin_write} (pgjdbc sends BEGIN with it, one
     * round trip). It sets, each local to the transaction (so nothing is left on the server session, whoever uses it
     * next), values that replace what another client (of a pooler, or earlier code on the same connection) may have
     * left on the server session and that would otherwise count for this transaction:
     * <ul>
     *   <li>{@code statement_timeout} and {@code lock_timeout}: the writer's ({@link FencedWriterConfig}; 0 = none):
     *       the guard's wait for the fence lock (while an advance holds it) and the work's waits on a deposed
     *       leader's row locks are bounded by the writer's value; the function itself waits for nothing but its read
     *       of the mark's table, after it has set the lock timeout;</li>
     *   <li>{@code idle_in_transaction_session_timeout}: a leader paused inside the transaction loses it;</li>
     *   <li>{@code fencing.term}, {@code fencing.resource}, {@code fencing.leader_id}: the token's, which the guard
     *       takes for the transaction's (another client's values would make the work stale, or advance the mark to a
     *       term of theirs under another leader id); {@code fencing.break_glass} cleared: the writer's writes are
     *       always fenced.</li>
     * </ul>
     * It records the transaction it began ({@link #commitIfStillTheWriters}) and returns the mark: marks only rise,
     * so a mark above the term is certain staleness, rejected before the work runs; NULL is an unknown resource. A
     * mark that rises after this read is the guard's to find (FL001 at the work's first write to a protected table).
     *
     * <p>The transaction must be READ COMMITTED, READ WRITE (the work's contract; a {@code default_transaction_read_only}
     * would refuse its writes). Isolation and access mode can only be set before a transaction's first query, so
     * the function checks them and refuses (FL014) when a default left on the session says otherwise. The statement
     * itself runs under the timeouts the session carries (it sets the writer's for the statements after it). Either
     * way the writer rolls back and from then on begins every transaction with {@link #explicitStart}
     * ({@link #beginWrite}): three utility statements more, paid only where such settings exist.
     */
    private static final String BEGIN_WRITE = "SELECT fencing.begin_write(?, ?, ?, ?, ?, ?)";

    /** Set once a transaction of this writer had its first statement spoiled by a server session's settings. */
    private volatile boolean explicitStartFirst;

    /**
     * {@link FencedWriter#enter}: the same isolation, access mode and timeouts as {@link #BEGIN_WRITE} (the
     * entering waits for the fence lock, bounded by the writer's lock timeout), then {@code fencing.enter()}, which
     * enters this transaction and advances the mark when the term is newer; committed, so the advance (and the
     * termination of older terms' transactions it made) takes effect now.
     */
    private static String enterStatement(FencedWriterConfig config) {
        return timeoutsFirst(config)
                + " SELECT set_config('idle_in_transaction_session_timeout', ?, true), fencing.enter(?, ?, ?)";
    }

    /**
     * The commands before {@link FencedWriter#enter}'s SELECT (and before {@link #BEGIN_WRITE} once a session's
     * settings spoiled it): isolation and access mode, the login's own role (a {@code SET ROLE} another client left
     * would run the work as another role: the fence decides by the login anyway), then the statement and lock
     * timeouts as utility statements of their own. PostgreSQL arms a statement's timeout when the statement starts, and
     * the advance waits for locks: values another client left would count for it. The values are the writer's
     * configured durations written into the text (a utility statement takes no parameters): whole milliseconds, so
     * nothing else can reach the text.
     */
    private static String timeoutsFirst(FencedWriterConfig config) {
        return "SET TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE; SET LOCAL ROLE NONE;"
                + " SET LOCAL statement_timeout = '" + millis(config.statementTimeout()) + "';"
                + " SET LOCAL lock_timeout = '" + millis(config.lockTimeout()) + "';";
    }

    private static final String READ_MARK = "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = ?";

    /** The resource's mark (autocommit, a snapshot), or null when the resource is not registered. */
    static @Nullable Long readMark(Connection c, String resource) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(READ_MARK)) {
            ps.setString(1, resource);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : null;
            }
        }
    }

    /**
     * Right before COMMIT: the transaction must still be the one the writer opened, and healthy, or COMMIT would report
     * success for something else. From pgjdbc's own state, no round trip:
     * <ul>
     *   <li>the connection died under the work (e.g. an advance terminated it) and the work swallowed the error:
     *       COMMIT was never sent, so nothing was committed; thrown as a connection failure, so the writer checks the
     *       mark and reports a deposed term as rejected (audited) like any transaction the advance cut off;</li>
     *   <li>FAILED: a statement failed and the work caught the error; PostgreSQL would turn COMMIT into a rollback and
     *       pgjdbc would not say so;</li>
     *   <li>IDLE: the work ended the transaction itself (COMMIT, ROLLBACK or PREPARE TRANSACTION sent as SQL); what it
     *       wrote before may be committed or prepared, outside the writer's all-or-nothing (fenced all the same: it was
     *       written under the term, and its fence lock was held until it ended).</li>
     * </ul>
     * A transaction that was ended and another one begun (COMMIT AND CHAIN, or COMMIT then more SQL) is OPEN here:
     * {@link #commitIfStillTheWriters} finds it. Such a new transaction has no term (the writer's settings ended with
     * the first), so the guard refuses its writes to protected tables (FL002).
     */
    static void checkStillTheWritersTransaction(Connection c, FencingToken token) throws SQLException {
        org.postgresql.core.BaseConnection pg = null;
        if (!c.isClosed()) { // a pool's proxy closes itself when the driver reports the connection broken
            try {
                pg = c.unwrap(org.postgresql.core.BaseConnection.class);
            } catch (SQLException notPgjdbc) {
                return;
            }
        }
        if (pg == null || pg.isClosed()) {
            throw new SQLException(
                    "the connection of the fenced transaction of " + token + " was closed before COMMIT"
                            + " (the work caught the failure): nothing was committed",
                    "08003");
        }
        switch (pg.getTransactionState()) {
            case FAILED ->
                throw new IllegalStateException("fenced work of " + token + " caught a failed statement and"
                        + " returned normally; PostgreSQL had aborted the transaction, so nothing was committed (rethrow"
                        + " SQL errors from the work, or roll back to a savepoint before going on)");
            case IDLE ->
                throw new IllegalStateException("fenced work of " + token + " ended its transaction itself"
                        + " (COMMIT, ROLLBACK or PREPARE TRANSACTION sent as SQL): what it wrote before that may be"
                        + " committed or left prepared outside the fence's all-or-nothing; the writer owns the"
                        + " transaction");
            default -> {}
        }
    }

    /**
     * The writer's COMMIT, sent in one message after {@code fencing.check_writers_transaction()}: the server runs the
     * COMMIT only if the transaction is still the one {@code fencing.begin_write} began, i.e. if the work did not end
     * the writer's transaction and go on in another (COMMIT AND CHAIN, or COMMIT then more SQL, through the connection
     * view or the one jOOQ hands out, or a procedure that commits). Otherwise FL013 and nothing more is committed
     * ({@link RejectionAudit#translate} says what the work may have committed itself). One round trip, like a plain COMMIT: pgjdbc
     * sends both statements before one Sync, and the server skips the rest after an error.
     */
    static void commitIfStillTheWriters(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT fencing.check_writers_transaction(); COMMIT")) {
            ps.execute();
        }
    }

    /**
     * Sends {@link #BEGIN_WRITE} for {@code token} on {@code c}, which must not be in a transaction yet; returns the
     * mark (null: resource not registered). When what the server session carries spoils that statement — a default
     * making the transaction other than READ COMMITTED, READ WRITE (FL014), or a statement or lock timeout that
     * cancels it before it has set the writer's own (57014, 55P03) — the transaction is rolled back (nothing was
     * done in it) and begun again with {@link #explicitStart} first, as are all later ones of this writer.
     */
    @Nullable
    Long beginWrite(Connection c, FencingToken token) throws SQLException {
        if (!explicitStartFirst) {
            try {
                return beginWrite(c, token, BEGIN_WRITE);
            } catch (SQLException e) {
                if (!SqlStates.spoiledBySession(e)) {
                    throw e;
                }
                log.info(
                        "the server session's settings spoiled the writer's first statement ({}: {}); the writer now"
                                + " begins every transaction with SET TRANSACTION and SET LOCAL of its timeouts",
                        e.getSQLState(),
                        e.getMessage());
                explicitStartFirst = true;
                c.rollback();
            }
        }
        return beginWrite(c, token, explicitStart + " " + BEGIN_WRITE);
    }

    private @Nullable Long beginWrite(Connection c, FencingToken token, String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, token.resource());
            ps.setLong(2, token.term());
            ps.setString(3, token.leaderId());
            ps.setInt(4, (int) config.statementTimeout().toMillis());
            ps.setInt(5, (int) config.lockTimeout().toMillis());
            ps.setInt(6, (int) config.idleInTransactionSessionTimeout().toMillis());
            try (ResultSet rs = selectAfterSet(ps, "fencing.begin_write")) {
                long mark = rs.getLong(1);
                return rs.wasNull() ? null : mark;
            }
        }
    }

    /**
     * Runs {@code ps} ({@code SET TRANSACTION ...; SELECT ...}) and returns the SELECT's one row, positioned on it; the
     * caller closes it.
     */
    static ResultSet selectAfterSet(PreparedStatement ps, String what) throws SQLException {
        boolean rows = ps.execute(); // the SETs' results come first: no rows
        while (!rows && ps.getUpdateCount() != -1) { // -1: no results left (JDBC's end of a statement's results)
            rows = ps.getMoreResults();
        }
        if (!rows) {
            throw new SQLException("fencing: " + what + " returned no row");
        }
        ResultSet rs = ps.getResultSet();
        if (!rs.next()) {
            rs.close();
            throw new SQLException("fencing: " + what + " returned no row");
        }
        return rs;
    }

    /** A duration as a setting's value: whole milliseconds with their unit (0 = none, for the timeouts). */
    static String millis(java.time.Duration d) {
        return d.toMillis() + "ms";
    }
}
