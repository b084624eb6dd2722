package dev.fenceline.fencing;

import dev.fenceline.db.Databases;
import dev.fenceline.db.generated.Routines;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fenced writer's machinery; package-private, not API ({@link FencedWriter} is). See the package documentation of
 * {@code dev.fenceline.fencing} for the invariants.
 *
 * <p>One mode, and no fence state in Java or on a server session: nothing entered outlives a transaction. Every
 * transaction is: the writer's first statement ({@link #BEGIN_WRITE}: it sets the transaction's timeouts and fencing
 * settings, all local to the transaction, records the transaction and reads the mark), the work, and the writer's
 * COMMIT behind {@code fencing.check_writers_transaction} (one message). The guard on the
 * protected tables enters the transaction at the work's first write to one of them, advancing the mark when the term
 * is newer; the decision is always PostgreSQL's. The only cache is which tables are protected for which resource, a
 * check of the caller's {@link WriteDescription}, not of the fence.
 */
final class WriterEngine {
    private static final Logger log = LoggerFactory.getLogger(WriterEngine.class);
    private static final Settings SETTINGS = Databases.settings();
    private static final Pattern DETAIL =
            Pattern.compile("resource=(\\S*) offered_term=(\\S*) highest_accepted=(\\S*) audited=(\\S*) table=(.*)");

    private static final int ENTER_ATTEMPTS = 16;

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
     * settings spoiled it): isolation and access mode, then the statement and lock timeouts as utility statements of
     * their own. PostgreSQL arms a statement's timeout when the statement starts, and
     * the advance waits for locks: values another client left would count for it. The values are the writer's
     * configured durations written into the text (a utility statement takes no parameters): whole milliseconds, so
     * nothing else can reach the text.
     */
    private static String timeoutsFirst(FencedWriterConfig config) {
        return "SET TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE;"
                + " SET LOCAL statement_timeout = '" + millis(config.statementTimeout()) + "';"
                + " SET LOCAL lock_timeout = '" + millis(config.lockTimeout()) + "';";
    }

    private static final String READ_MARK = "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = ?";

    private final DataSource dataSource;
    private final FencedWriterConfig config;
    /** {@link #enterStatement} for this writer's timeouts. */
    private final String enterStatement;
    /** Isolation, access mode and the writer's statement and lock timeouts, each a utility statement of its own. */
    private final String explicitStart;
    /** "resource\0table" known to be protected for that resource. */
    private final Map<String, Boolean> protectedTables = new ConcurrentHashMap<>();
    /** One jOOQ context for all transactions; its connection is the current thread's fenced connection. */
    private final CurrentConnectionProvider current = new CurrentConnectionProvider();

    private final DSLContext workDsl = DSL.using(new org.jooq.impl.DefaultConfiguration()
            .set(current)
            .set(SQLDialect.POSTGRES)
            .set(SETTINGS)
            .set(new SavepointTransactions()));

    WriterEngine(DataSource dataSource, FencedWriterConfig config) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.config = Objects.requireNonNull(config, "config");
        this.enterStatement = enterStatement(config);
        this.explicitStart = timeoutsFirst(config);
    }

    FencedWriterConfig config() {
        return config;
    }

    <T> T transaction(FencingToken token, WriteDescription description, FencedWork<T> work) {
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(work, "work");
        if (description != null && description.payloadBytes() > config.maxPayloadBytes()) {
            throw new IllegalArgumentException("payloadJson cannot be larger than maxPayloadBytes ("
                    + config.maxPayloadBytes() + " bytes), was " + description.payloadBytes() + " bytes");
        }
        // Dead pooled connections (terminated by an advance) fail fast and are evicted; try fresh ones, bounded.
        int attempts = ENTER_ATTEMPTS;
        for (int attempt = 1; ; attempt++) {
            Connection c = borrow(token);
            boolean handedOver = false;
            try {
                if (description != null && config.checkProtectedTables()) {
                    try {
                        checkProtected(c, token.resource(), description.table());
                    } catch (SQLException e) {
                        // A pooled connection killed while idle (e.g. by an advance): nothing was written; try a
                        // fresh one, a bounded number of times.
                        if (SqlStates.isConnectionFailure(e) && attempt < attempts) {
                            log.debug(
                                    "connection lost before the transaction of {}, retrying on a fresh connection",
                                    token,
                                    e);
                            continue;
                        }
                        throw translateEnterFailure(token, e, description);
                    }
                }
                handedOver = true;
                return runTransaction(c, token, description, work, attempt < attempts);
            } catch (DeadBeforeWork dead) {
                // the writer's first statement found the pooled session dead: nothing was sent for the work
                log.debug(
                        "connection lost before the work of {}, retrying on a fresh connection",
                        token,
                        dead.getCause());
            } finally {
                if (!handedOver) {
                    closeQuietly(c);
                }
            }
        }
    }

    /**
     * Enters the token's term in a transaction of its own, committed: advances the mark when the term is newer (so a
     * deposed leader is fenced now rather than at the new leader's first write); throws if stale (audited).
     */
    void enter(FencingToken token) {
        Objects.requireNonNull(token, "token");
        Entered entered;
        try {
            entered = withFreshConnection("enter " + token, c -> enterAndCommit(c, token));
        } catch (SQLException e) {
            throw translateEnterFailure(token, e);
        }
        if (entered.mark != token.term()) {
            throw new StaleTermException(token.resource(), token.term(), entered.mark, null, entered.audited, null);
        }
    }

    private record Entered(long mark, boolean audited) {}

    /**
     * {@link #enterStatement(FencedWriterConfig)} on {@code c} in an explicit transaction: committed when accepted; when stale (the function
     * returns the higher mark and changed nothing) rolled back and audited on {@code c}, in its own autocommit
     * statement. Retried on a fresh connection when {@code c} dies: entering at the same term again is harmless.
     */
    private Entered enterAndCommit(Connection c, FencingToken token) throws SQLException {
        long mark;
        c.setAutoCommit(false);
        try {
            try (PreparedStatement ps = c.prepareStatement(enterStatement)) {
                ps.setString(1, millis(config.idleInTransactionSessionTimeout()));
                ps.setString(2, token.resource());
                ps.setLong(3, token.term());
                ps.setString(4, token.leaderId());
                try (ResultSet rs = selectAfterSet(ps, "entering")) {
                    mark = rs.getLong(2);
                }
            }
            if (mark == token.term()) {
                c.commit();
            } else {
                c.rollback();
            }
        } catch (SQLException | RuntimeException e) {
            rollbackQuietly(c);
            throw e;
        } finally {
            resetAutoCommit(c);
        }
        if (mark == token.term()) {
            return new Entered(mark, false);
        }
        return new Entered(mark, audit(c, token, mark, null));
    }

    /** See {@code FencedWriter.warmUp}: everything on the first commit's path, rolled back. */
    java.time.Duration warmUp(String resource) {
        FencingToken token = FencingToken.of(resource, 1); // validates the name
        long t0 = System.nanoTime();
        try {
            withFreshConnection("warm up " + resource, c -> {
                c.setAutoCommit(false);
                try {
                    // the writer's own first statement, as every transaction sends it (it reads the mark too)
                    Long mark = beginWrite(c, token);
                    WarmUp.run(c, workDsl, current, token, mark);
                    // the writer's own steps before its COMMIT: the driver's state check, and the two-statement
                    // message with the COMMIT (prepared, not run: pgjdbc parses it into a composite query)
                    checkStillTheWritersTransaction(c, token);
                    c.prepareStatement("SELECT fencing.check_writers_transaction(); COMMIT")
                            .close();
                } finally {
                    rollbackQuietly(c);
                    resetAutoCommit(c);
                }
                return null;
            });
        } catch (SQLException e) {
            throw new FenceUnavailableException(
                    "could not warm up the writer for " + resource + ": " + e.getMessage(), e);
        }
        return java.time.Duration.ofNanos(System.nanoTime() - t0);
    }

    long registerResource(String resource) {
        FencingToken token = FencingToken.of(resource, 1); // validates the name
        try {
            return withFreshConnection(
                    "register resource " + resource, c -> Routines.registerResource(dsl(c).configuration(), resource));
        } catch (SQLException e) {
            throw translateEnterFailure(token, e);
        }
    }

    long highestAccepted(String resource) {
        FencingToken.of(resource, 1);
        Long mark;
        try {
            mark = withFreshConnection("read the mark of " + resource, c -> readMark(c, resource));
        } catch (SQLException e) {
            throw new FenceUnavailableException("could not read the mark of " + resource + ": " + e.getMessage(), e);
        }
        if (mark == null) {
            throw new UnknownResourceException(resource, null);
        }
        return mark;
    }

    /** The resource's mark (autocommit, a snapshot), or null when the resource is not registered. */
    private static Long readMark(Connection c, String resource) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(READ_MARK)) {
            ps.setString(1, resource);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : null;
            }
        }
    }

    @FunctionalInterface
    private interface SqlFunction<T> {
        T apply(Connection c) throws SQLException;
    }

    /**
     * Runs {@code f} on a pooled connection; when that connection turns out dead (e.g. terminated by an advance while
     * it held the fence lock of an older term), tries another, a bounded number of times.
     * Other SQL failures are thrown as they are.
     */
    private <T> T withFreshConnection(String what, SqlFunction<T> f) throws SQLException {
        return withFreshConnection(what, ENTER_ATTEMPTS, f);
    }

    private <T> T withFreshConnection(String what, int attempts, SqlFunction<T> f) throws SQLException {
        SQLException last = null;
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
                SQLException s = findSqlException(e);
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
        throw last;
    }

    // ---------------------------------------------------------------------------------------------------------

    /**
     * The writer's first statement of a transaction failed with a connection failure (a pooled session terminated
     * while idle in the pool): nothing of the work was sent; the caller tries a fresh connection.
     */
    private static final class DeadBeforeWork extends RuntimeException {
        DeadBeforeWork(SQLException cause) {
            super(null, cause, false, false);
        }
    }

    private <T> T runTransaction(
            Connection c, FencingToken token, WriteDescription description, FencedWork<T> work, boolean mayRetry) {
        boolean committing = false;
        Connection previous = current.bind(c);
        try {
            try {
                c.setAutoCommit(false);
                // The writer's own first statement begins the transaction (pgjdbc sends BEGIN with it) and records
                // it on the server until the writer's COMMIT (commitIfStillTheWriters).
                try {
                    begin(c, token);
                } catch (SQLException e) {
                    if (mayRetry && SqlStates.isConnectionFailure(e)) {
                        throw new DeadBeforeWork(e);
                    }
                    throw e;
                }
                FencedContextImpl ctx = new FencedContextImpl(workDsl, token, c);
                T result;
                try {
                    result = work.run(ctx);
                } finally {
                    ctx.end();
                }
                checkStillTheWritersTransaction(c, token);
                committing = true;
                commitIfStillTheWriters(c);
                return result;
            } catch (DeadBeforeWork dead) {
                throw dead;
            } catch (Throwable t) {
                rollbackQuietly(c);
                // A rejection is recorded on this connection, back in autocommit: a pool with no other connection
                // free (a pool of one, or a busy one) must not lose the audit row to its connection timeout.
                resetAutoCommit(c);
                throw translate(t, committing, token, description, c);
            } finally {
                resetAutoCommit(c);
            }
        } finally {
            current.restore(previous);
            closeQuietly(c);
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
    private static void checkStillTheWritersTransaction(Connection c, FencingToken token) throws SQLException {
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
     * ({@link #translate} says what the work may have committed itself). One round trip, like a plain COMMIT: pgjdbc
     * sends both statements before one Sync, and the server skips the rest after an error.
     */
    private static void commitIfStillTheWriters(Connection c) throws SQLException {
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
    private Long beginWrite(Connection c, FencingToken token) throws SQLException {
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

    private Long beginWrite(Connection c, FencingToken token, String sql) throws SQLException {
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
     * Begins the transaction with {@link #BEGIN_WRITE}. A mark above the token's term is certain staleness (marks only
     * rise): {@link StaleEntering}, rolled back and audited by the caller. No mark row: {@link UnknownResourceException}.
     * A mark below the term is advanced here, before the work.
     */
    private void begin(Connection c, FencingToken token) throws SQLException {
        Long first = beginWrite(c, token);
        if (first == null) {
            throw new UnknownResourceException(token.resource(), null);
        }
        if (first > token.term()) {
            throw new StaleEntering(first);
        }
        if (first < token.term()) {
            // A new term: advance before the work, holding nothing yet. Left to the work's first write, the guard
            // would hold the shared fence lock while advancing, and an advance ends every other holder: two
            // transactions of the new leader would end each other.
            try (PreparedStatement ps = c.prepareStatement("SELECT fencing.enter(?, ?, ?)")) {
                ps.setString(1, token.resource());
                ps.setLong(2, token.term());
                ps.setString(3, token.leaderId());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    long mark = rs.getLong(1);
                    if (mark != token.term()) {
                        throw new StaleEntering(mark);
                    }
                }
            }
        }
    }

    /**
     * Runs {@code ps} ({@code SET TRANSACTION ...; SELECT ...}) and returns the SELECT's one row, positioned on it; the
     * caller closes it.
     */
    private static ResultSet selectAfterSet(PreparedStatement ps, String what) throws SQLException {
        boolean rows = ps.execute(); // the SETs' results come first: no rows
        for (int i = 0; i < 3 && !rows; i++) {
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
    private static String millis(java.time.Duration d) {
        return d.toMillis() + "ms";
    }

    /** Thrown inside a transaction whose first statement read a mark above the term; nothing was written. */
    private static final class StaleEntering extends RuntimeException {
        private final long mark;

        StaleEntering(long mark) {
            super(null, null, false, false);
            this.mark = mark;
        }
    }

    private RuntimeException translate(
            Throwable t, boolean committing, FencingToken token, WriteDescription d, Connection c) {
        if (t instanceof Error e) {
            throw e;
        }
        if (t instanceof StaleEntering s) {
            // The first statement read a higher mark; the transaction is rolled back. Audit like a stale enter().
            boolean audited = audit(c, token, s.mark, d);
            return new StaleTermException(
                    token.resource(), token.term(), s.mark, d == null ? null : d.table(), audited, null);
        }
        SQLException sql = findSqlException(t);
        String sqlState = sql == null ? null : sql.getSQLState();
        if (SqlStates.STALE_TERM.equals(sqlState)) {
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
        if (SqlStates.NO_TERM.equals(sqlState)) {
            // a write with no term for its table: a table of another resource, or the work ended the writer's
            // transaction and wrote in the next one (the writer's settings end with its transaction)
            Matcher m = detail(sql);
            return new NotFencedException(
                    m != null ? m.group(1) : null, m != null ? m.group(5) : null, sql.getMessage(), t);
        }
        if (SqlStates.isFenceCode(sqlState)) {
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
            SQLException sql, Throwable cause, FencingToken token, WriteDescription d) {
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

    private RuntimeException translateEnterFailure(FencingToken token, SQLException e) {
        return translateEnterFailure(token, e, null);
    }

    private RuntimeException translateEnterFailure(FencingToken token, SQLException e, WriteDescription d) {
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
    private Recheck recheck(FencingToken token) {
        try {
            return withFreshConnection("re-check the fence of " + token, config.connectionRecheckAttempts(), c -> {
                Long mark = readMark(c, token.resource());
                long m = mark == null ? -1 : mark;
                return new Recheck(m > token.term(), m);
            });
        } catch (SQLException | RuntimeException e) {
            log.warn("could not re-check the fence of {} after a lost connection", token, e);
            return null;
        }
    }

    private boolean auditOnFreshConnection(FencingToken token, long mark, WriteDescription d) {
        try {
            return withFreshConnection("record a rejection", c -> {
                recordRejection(c, token, mark, d);
                return true;
            });
        } catch (SQLException | RuntimeException e) {
            log.error(
                    "could not record rejection of {} (highest accepted {}) in fencing.rejected_write", token, mark, e);
            return false;
        }
    }

    private static void recordRejection(Connection c, FencingToken token, long mark, WriteDescription d) {
        Routines.recordRejection(
                dsl(c).configuration(),
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
    private boolean audit(Connection c, FencingToken token, long mark, WriteDescription d) {
        try {
            recordRejection(c, token, mark, d);
            return true;
        } catch (RuntimeException e) {
            log.error(
                    "could not record rejection of {} (highest accepted {}) in fencing.rejected_write", token, mark, e);
            return false;
        }
    }

    private void checkProtected(Connection c, String resource, String table) throws SQLException {
        String key = resource + '\u0000' + table;
        if (protectedTables.containsKey(key)) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT p.resource FROM fencing.protected_table p WHERE p.tbl = pg_catalog.to_regclass(?)")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                String protectedFor = rs.next() ? rs.getString(1) : null;
                if (!resource.equals(protectedFor)) {
                    throw new TableNotProtectedException(table, resource, protectedFor);
                }
            }
        }
        protectedTables.put(key, Boolean.TRUE);
    }

    private Connection borrow(FencingToken token) {
        try {
            return dataSource.getConnection();
        } catch (SQLException e) {
            throw new FenceUnavailableException("could not get a connection for " + token + ": " + e.getMessage(), e);
        }
    }

    private static DSLContext dsl(Connection c) {
        return DSL.using(c, SQLDialect.POSTGRES, SETTINGS);
    }

    private static Matcher detail(SQLException e) {
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

    static SQLException findSqlException(Throwable t) {
        for (Throwable x = t; x != null; x = x.getCause()) {
            if (x instanceof SQLException s) {
                return s;
            }
            if (x.getCause() == x) {
                break;
            }
        }
        return null;
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // connection already broken: the server rolled back (or, during COMMIT, the outcome is unknown)
        }
    }

    private static void resetAutoCommit(Connection c) {
        try {
            c.setAutoCommit(true);
        } catch (SQLException ignored) {
            // broken connection: the pool evicts it
        }
    }

    private static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (SQLException e) {
            log.debug("closing a connection failed", e);
        }
    }
}
