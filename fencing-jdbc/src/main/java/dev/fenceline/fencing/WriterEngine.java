package dev.fenceline.fencing;

import dev.fenceline.db.Databases;
import dev.fenceline.db.generated.Routines;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.OffsetDateTime;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fenced writer's machinery; package-private, not API ({@link FencedWriter} is). See the package documentation of
 * {@code dev.fenceline.fencing} for the invariants: the per-physical-connection cache only ever remembers what
 * {@code fencing.enter()} answered on that very session, and a session that dies is a new physical connection next
 * time, so the cache can never claim a fence the database does not hold.
 *
 * <p>Hot path (connection already entered at the token's term): borrow a connection, one map lookup, run the work
 * in a transaction, commit. No extra statement: PostgreSQL's statement trigger checks the session fence by reading two
 * settings (with {@code stampTransactionTerm} the writer's one statement setting the term also reads the
 * transaction's start, checked in the same message as the COMMIT: see {@code commitIfStillTheWriters}). Slow path (first use of a physical connection for a (resource, term), or a
 * new term): one autocommit call of {@code fencing.enter()}, which may advance the mark (terminating the sessions of
 * older terms) or report the term stale. The decision is always PostgreSQL's; Java only caches "this physical session was entered at term t", which
 * stays true for as long as that session lives (an advance past t terminates it).
 *
 * <p>{@link EnterScope#TRANSACTION} (behind a transaction-mode pooler): no cache and no session state; every
 * transaction starts with one statement, {@code fencing.enter_transaction()} plus the writer's timeouts and the
 * token's fencing settings (and the transaction's start), all local to that transaction, so that nothing another
 * client left on the pooled server session counts for it.
 */
final class WriterEngine {
    private static final Logger log = LoggerFactory.getLogger(WriterEngine.class);
    private static final Settings SETTINGS = Databases.settings();
    private static final Pattern DETAIL = Pattern.compile(
            "resource=(\\S*) offered_term=(\\S*) highest_accepted=(\\S*) audited=(\\S*) table=(.*)");

    private static final int ENTER_ATTEMPTS = 16;

    private final DataSource dataSource;
    private final FencedWriterConfig config;
    /** Per physical connection: resource -> term this session is entered at. Weak: dead connections disappear. */
    private final Map<PGConnection, Map<String, Long>> entered = Collections.synchronizedMap(new WeakHashMap<>());
    /** "resource\0table" known to be protected for that resource. */
    private final Map<String, Boolean> protectedTables = new ConcurrentHashMap<>();
    /** One jOOQ context for all transactions; its connection is the current thread's fenced connection. */
    private final CurrentConnectionProvider current = new CurrentConnectionProvider();
    private final DSLContext workDsl = DSL.using(new org.jooq.impl.DefaultConfiguration().set(current)
            .set(SQLDialect.POSTGRES).set(SETTINGS).set(new RefuseTransactionControl())
            .set(new SavepointTransactions()));

    /** The work's jOOQ statements may not end the fenced transaction either ({@link TransactionControl}). */
    private static final class RefuseTransactionControl implements org.jooq.ExecuteListener {
        private static final long serialVersionUID = 1L;

        @Override
        public void executeStart(org.jooq.ExecuteContext ctx) {
            try {
                TransactionControl.refuse(ctx.sql(), "FencedContext.dsl()");
            } catch (SQLException e) {
                throw new org.jooq.exception.DataAccessException(e.getMessage(), e);
            }
        }
    }

    WriterEngine(DataSource dataSource, FencedWriterConfig config) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.config = Objects.requireNonNull(config, "config");
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
                Map<String, Long> state = stateOf(c);
                try {
                    if (description != null && config.checkProtectedTables()) {
                        checkProtected(c, token.resource(), description.table());
                    }
                    if (config.enterScope() == EnterScope.SESSION) {
                        ensureEntered(c, state, token, description);
                    }
                } catch (SQLException e) {
                    // A pooled connection killed by an advance (ours or someone else's): nothing was written; try a
                    // fresh one, a bounded number of times.
                    if (isConnectionFailure(e) && attempt < attempts) {
                        log.debug("connection lost while entering {}, retrying on a fresh connection", token, e);
                        continue;
                    }
                    throw translateEnterFailure(token, e, description);
                }
                handedOver = true;
                return runTransaction(c, state, token, description, work, attempt < attempts);
            } catch (DeadBeforeWork dead) {
                // the writer's first statement found the pooled session dead: nothing was sent for the work
                log.debug("connection lost before the work of {}, retrying on a fresh connection", token,
                        dead.getCause());
            } finally {
                if (!handedOver) {
                    closeQuietly(c);
                }
            }
        }
    }

    /** Enters a pooled connection at the token's term (advancing the mark if newer); throws if stale. */
    void enter(FencingToken token) {
        Objects.requireNonNull(token, "token");
        transaction(token, null, ctx -> null);
    }

    /** See {@code FencedWriter.warmUp}: everything on the first commit's path, rolled back. */
    java.time.Duration warmUp(String resource) {
        FencingToken token = FencingToken.of(resource, 1);   // validates the name
        long t0 = System.nanoTime();
        try {
            withFreshConnection("warm up " + resource, c -> {
                stateOf(c);
                c.setAutoCommit(false);
                try {
                    WarmUp.run(c, workDsl, current, token);
                } finally {
                    rollbackQuietly(c);
                    c.setAutoCommit(true);
                }
                if (config.enterScope() == EnterScope.SESSION) {
                    WarmUp.sessionEnteringTable(c);
                }
                return null;
            });
        } catch (SQLException e) {
            throw new FenceUnavailableException("could not warm up the writer for " + resource + ": "
                    + e.getMessage(), e);
        }
        return java.time.Duration.ofNanos(System.nanoTime() - t0);
    }

    long registerResource(String resource) {
        FencingToken token = FencingToken.of(resource, 1);   // validates the name
        try {
            return withFreshConnection("register resource " + resource,
                    c -> Routines.registerResource(dsl(c).configuration(), resource));
        } catch (SQLException e) {
            throw translateEnterFailure(token, e);
        }
    }

    long highestAccepted(String resource) {
        FencingToken.of(resource, 1);
        Long mark;
        try {
            mark = withFreshConnection("read the mark of " + resource, c -> {
                try (PreparedStatement ps = c.prepareStatement(
                        "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = ?")) {
                    ps.setString(1, resource);
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? rs.getLong(1) : null;
                    }
                }
            });
        } catch (SQLException e) {
            throw new FenceUnavailableException("could not read the mark of " + resource + ": " + e.getMessage(), e);
        }
        if (mark == null) {
            throw new UnknownResourceException(resource, null);
        }
        return mark;
    }

    @FunctionalInterface
    private interface SqlFunction<T> {
        T apply(Connection c) throws SQLException;
    }

    /**
     * Runs {@code f} on a pooled connection; when that connection turns out dead (terminated by an advance, which
     * also kills idle pooled sessions entered at older terms), tries another, a bounded number of times.
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
                if (!isConnectionFailure(e)) {
                    throw e;
                }
                last = e;
            } catch (org.jooq.exception.DataAccessException e) {
                SQLException s = findSqlException(e);
                if (s == null) {
                    throw e;
                }
                if (!isConnectionFailure(s)) {
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
     * The writer's first statement of a transaction failed with a connection failure (a pooled session terminated,
     * e.g. by an advance, while idle in the pool): nothing of the work was sent; the caller tries a fresh connection,
     * as it does when entering.
     */
    private static final class DeadBeforeWork extends RuntimeException {
        DeadBeforeWork(SQLException cause) {
            super(null, cause, false, false);
        }
    }

    private <T> T runTransaction(Connection c, Map<String, Long> state, FencingToken token,
                                 WriteDescription description, FencedWork<T> work, boolean mayRetry) {
        boolean committing = false;
        Connection previous = current.bind(c);
        try {
            try {
                c.setAutoCommit(false);
                // The writer's own first statement begins the transaction (pgjdbc sends BEGIN with it) and reads its
                // start, which identifies it on this backend until the writer's COMMIT (commitIfStillTheWriters).
                OffsetDateTime started;
                try {
                    started = begin(c, token);
                } catch (SQLException e) {
                    if (mayRetry && isConnectionFailure(e)) {
                        synchronized (entered) {
                            state.clear();                // the physical session is gone
                        }
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
                checkStillTheWritersTransaction(c, token, started != null || ctx.sentSqlThroughConnection());
                committing = true;
                if (started != null) {
                    commitIfStillTheWriters(c, started);
                } else {
                    c.commit();
                }
                return result;
            } catch (DeadBeforeWork dead) {
                throw dead;
            } catch (Throwable t) {
                rollbackQuietly(c);
                throw translate(t, committing, c, state, token, description);
            } finally {
                try {
                    c.setAutoCommit(true);
                } catch (SQLException ignored) {
                    // broken connection: the pool evicts it
                }
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
     *       wrote before may be committed or prepared, outside the writer's all-or-nothing.</li>
     * </ul>
     * SQL text that ends the transaction is refused before it is sent ({@link TransactionControl}); this check and
     * {@link #commitIfStillTheWriters} are what remains for ways the text scan does not see. IDLE counts only when the
     * transaction was begun ({@code begun}: by the writer's own first statement, or SQL the work sent through
     * {@code ctx.connection()}): an empty work leaves it IDLE too. A transaction that was ended and another one begun
     * (COMMIT AND CHAIN) is OPEN here: {@link #commitIfStillTheWriters} finds it where the writer read the start.
     */
    private static void checkStillTheWritersTransaction(Connection c, FencingToken token, boolean begun)
            throws SQLException {
        org.postgresql.core.BaseConnection pg = null;
        if (!c.isClosed()) {   // a pool's proxy closes itself when the driver reports the connection broken
            try {
                pg = c.unwrap(org.postgresql.core.BaseConnection.class);
            } catch (SQLException notPgjdbc) {
                return;
            }
        }
        if (pg == null || pg.isClosed()) {
            throw new SQLException("the connection of the fenced transaction of " + token + " was closed before COMMIT"
                    + " (the work caught the failure): nothing was committed", "08003");
        }
        switch (pg.getTransactionState()) {
            case FAILED -> throw new IllegalStateException("fenced work of " + token + " caught a failed statement and"
                    + " returned normally; PostgreSQL had aborted the transaction, so nothing was committed (rethrow"
                    + " SQL errors from the work, or roll back to a savepoint before going on)");
            case IDLE -> {
                if (!begun) {
                    return;        // nothing was sent in this transaction yet (pgjdbc begins it with the first statement)
                }
                throw new IllegalStateException("fenced work of " + token + " ended its transaction itself"
                    + " (COMMIT, ROLLBACK or PREPARE TRANSACTION sent as SQL): what it wrote before that may be"
                    + " committed or left prepared outside the fence's all-or-nothing; the writer owns the"
                    + " transaction");
            }
            default -> { }
        }
    }

    /**
     * The writer's COMMIT, sent in one message after {@code fencing.check_writers_transaction(started)}: the server
     * runs the COMMIT only if the transaction's start is still the one the writer's first statement read, i.e. if the work
     * did not end the writer's transaction and go on in another (COMMIT AND CHAIN, or COMMIT then BEGIN, through a way
     * the text scan does not see, such as the connection jOOQ hands out). Otherwise FL013 and nothing more is
     * committed ({@link #translate} says what the work may have committed itself). One round trip, like a plain
     * COMMIT: pgjdbc sends both statements before one Sync, and the server skips the rest after an error.
     */
    private static void commitIfStillTheWriters(Connection c, OffsetDateTime started) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT fencing.check_writers_transaction(?); COMMIT")) {
            ps.setObject(1, started);
            ps.execute();
        }
    }

    /**
     * The writer's first statement in the transaction (entering it, in transaction scope; stamping the term), which
     * also returns the transaction's start; null in session scope without stamping, where the writer sends nothing of
     * its own before the work: that is the fence's hot path, no round trip besides the work's and the COMMIT, and
     * reading the start there would add one to every transaction (a noisy run measured client CPU per transaction
     * +23 % to +85 %, docs/benchmarks.md). Work ended through jOOQ's raw connection and
     * continued in a new transaction then goes unseen; what it wrote is still fenced (the server session stays
     * entered at the term, and an advance terminates it), but it is not all-or-nothing (docs/fencing.md).
     */
    private OffsetDateTime begin(Connection c, FencingToken token) throws SQLException {
        if (config.enterScope() == EnterScope.TRANSACTION) {
            return enterTransaction(c, token);
        }
        if (config.stampTransactionTerm()) {
            try (PreparedStatement ps = c.prepareStatement("SELECT set_config('fencing.term', ?, true),"
                    + " set_config('fencing.resource', ?, true), pg_catalog.transaction_timestamp()")) {
                ps.setString(1, Long.toString(token.term()));
                ps.setString(2, token.resource());
                return started(ps, 3);
            }
        }
        return null;
    }

    /** Runs {@code ps} (the writer's first statement in a transaction) and returns its column {@code column}. */
    private static OffsetDateTime started(PreparedStatement ps, int column) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getObject(column, OffsetDateTime.class);
        }
    }

    /**
     * {@code fencing.enter()} on {@code c} (autocommit). An advance runs only under READ COMMITTED (FL011: it must see
     * every entering that committed while it waited); when the connection's default isolation is stricter, the
     * entering is repeated in an explicit READ COMMITTED transaction.
     */
    private static long enterSession(Connection c, FencingToken token) throws SQLException {
        try {
            return callEnter(c, token);
        } catch (SQLException s) {
            if (!"FL011".equals(s.getSQLState())) {
                throw s;
            }
        }
        c.setAutoCommit(false);
        try {
            try (Statement st = c.createStatement()) {
                st.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
            }
            long mark = callEnter(c, token);
            c.commit();
            return mark;
        } catch (SQLException e) {
            rollbackQuietly(c);
            throw e;
        } finally {
            c.setAutoCommit(true);
        }
    }

    /**
     * One plain prepared statement, not jOOQ's routine call: this runs right after a leader wins, and jOOQ's first
     * routine call loads the generated schema and its parser (hundreds of classes in a fresh JVM).
     */
    private static long callEnter(Connection c, FencingToken token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT fencing.enter(?, ?, ?)")) {
            ps.setString(1, token.resource());
            ps.setLong(2, token.term());
            ps.setString(3, token.leaderId());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** Thrown inside a transaction whose {@code enter_transaction()} found a higher mark; nothing was written. */
    private static final class StaleEntering extends RuntimeException {
        private final long mark;

        StaleEntering(long mark) {
            super(null, null, false, false);
            this.mark = mark;
        }
    }

    /**
     * Enters the open transaction at the token's term, and sets the writer's timeouts for it (a transaction-mode
     * pooler drops the connection's startup options). One statement, one round trip. Returns the transaction's start;
     * throws {@link StaleEntering} with the mark when that is not the term. The timeouts come first in the select
     * list, which PostgreSQL evaluates in order: entering waits for the fence lock, and that wait must already be
     * bounded by the writer's lock timeout (behind the pooler the server session's own is the server default, none).
     * The transaction's fencing settings are set first too, to the token's (term, resource, leader id) with
     * break-glass cleared: another client of the pooler may have left session-level values of them on the server
     * session, and the guard would take those for this transaction's (a stale term: the work rejected; a newer term
     * with its resource: the work advancing the mark to it, under another leader id).
     *
     * <p>The transaction runs at READ COMMITTED whatever the server session's default: an advance runs only there
     * (FL011), and a {@code default_transaction_isolation} another client of the pooler left on the server session (or
     * one set for the role) would otherwise stop the new leader's first transaction. {@code SET TRANSACTION} is the
     * transaction's first command, so nothing is left on the server session; pgjdbc sends BEGIN, it and the select
     * in one message (one Sync), so it costs no round trip.
     */
    private OffsetDateTime enterTransaction(Connection c, FencingToken token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SET TRANSACTION ISOLATION LEVEL READ COMMITTED;"
                + " SELECT set_config('lock_timeout', ?, true),"
                + " set_config('idle_in_transaction_session_timeout', ?, true), set_config('fencing.term', ?, true),"
                + " set_config('fencing.resource', ?, true), set_config('fencing.leader_id', ?, true),"
                + " set_config('fencing.break_glass', '', true), fencing.enter_transaction(?, ?, ?),"
                + " pg_catalog.transaction_timestamp()")) {
            ps.setString(1, config.lockTimeout().toMillis() + "ms");
            ps.setString(2, config.idleInTransactionSessionTimeout().toMillis() + "ms");
            ps.setString(3, Long.toString(token.term()));
            ps.setString(4, token.resource());
            ps.setString(5, token.leaderId() == null ? "" : token.leaderId());
            ps.setString(6, token.resource());
            ps.setLong(7, token.term());
            ps.setString(8, token.leaderId());
            ps.execute();                                         // the SET's result: no rows
            if (!ps.getMoreResults()) {
                throw new SQLException("fencing: entering the transaction returned no row");
            }
            try (ResultSet rs = ps.getResultSet()) {
                rs.next();
                long mark = rs.getLong(7);
                if (mark != token.term()) {
                    throw new StaleEntering(mark);
                }
                return rs.getObject(8, OffsetDateTime.class);
            }
        }
    }

    private void ensureEntered(Connection c, Map<String, Long> state, FencingToken token, WriteDescription d)
            throws SQLException {
        Long current = state.get(token.resource());
        if (current != null && current == token.term()) {
            return;                                               // hot path: this session is entered at the term
        }
        long mark;
        if (!c.getAutoCommit()) {
            c.setAutoCommit(true);   // enter() must commit on its own: an advance releases its exclusive lock at commit
        }
        mark = enterSession(c, token);
        if (mark == token.term()) {
            state.put(token.resource(), token.term());
            return;
        }
        // Stale: PostgreSQL accepted a higher term. Nothing was written; audit in its own (autocommit) statement.
        state.remove(token.resource());
        boolean audited = audit(c, token, mark, d);
        throw new StaleTermException(token.resource(), token.term(), mark, d == null ? null : d.table(), audited,
                null);
    }

    private RuntimeException translate(Throwable t, boolean committing, Connection c, Map<String, Long> state,
                                       FencingToken token, WriteDescription d) {
        if (t instanceof Error e) {
            throw e;
        }
        if (t instanceof StaleEntering s) {
            // enter_transaction() found a higher mark; the transaction is rolled back. Audit like a stale enter().
            boolean audited = auditOnFreshConnection(token, s.mark, d);
            return new StaleTermException(token.resource(), token.term(), s.mark, d == null ? null : d.table(),
                    audited, null);
        }
        SQLException sql = findSqlException(t);
        String sqlState = sql == null ? null : sql.getSQLState();
        if ("FL001".equals(sqlState)) {
            // The trigger decided (e.g. the work set another fencing.term): it audited via dblink if it could.
            state.remove(token.resource());
            return staleFromServer(sql, t, token, d);
        }
        if ("FL013".equals(sqlState)) {
            // fencing.check_writers_transaction() refused before the COMMIT in the same message: not committed.
            return new IllegalStateException("fenced work of " + token + " ended the writer's transaction itself and"
                    + " went on in a new one (e.g. COMMIT AND CHAIN, or a commit through the connection jOOQ hands out"
                    + " by DSLContext.connection or DSLContext.transaction): the writer did not commit and rolled back"
                    + " what followed, but what the work wrote before it ended the transaction may have been committed"
                    + " outside the fence's all-or-nothing; the writer owns the transaction", t);
        }
        if ("FL002".equals(sqlState)) {
            state.remove(token.resource());
            Matcher m = detail(sql);
            return new NotFencedException(m != null ? m.group(1) : null, m != null ? m.group(5) : null,
                    sql.getMessage(), t);
        }
        if (sqlState != null && sqlState.startsWith("FL")) {
            return translateEnterFailure(token, sql);
        }
        if (sql != null && isConnectionFailure(sql)) {
            synchronized (entered) {
                // the physical session is gone; its entry (if still mapped) is meaningless
                state.clear();
            }
            Recheck r = recheck(token);
            if (committing) {
                return new CommitOutcomeUnknownException(token, r == null ? null : r.deposed, r == null ? null : r.mark,
                        t);
            }
            if (r != null && r.deposed) {
                // Terminated by the advance of a newer term: not committed, rejected as a whole. Audit it.
                boolean audited = auditOnFreshConnection(token, r.mark, d);
                return new StaleTermException(token.resource(), token.term(), r.mark, d == null ? null : d.table(),
                        audited, t);
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
    private StaleTermException staleFromServer(SQLException sql, Throwable cause, FencingToken token,
                                               WriteDescription d) {
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
        String s = e.getSQLState();
        if ("FL001".equals(s)) {
            // enter() refused the term outright: another leader already holds this very term (see
            // fencing.reject_term_conflict). Nothing was written.
            return staleFromServer(e, e, token, d);
        }
        if ("FL003".equals(s)) {
            return new IllegalArgumentException(e.getMessage(), e);
        }
        if ("FL004".equals(s)) {
            return new UnknownResourceException(token.resource(), e);
        }
        if ("FL005".equals(s)) {
            return new FenceUnavailableException(e.getMessage(), e);
        }
        if ("FL009".equals(s)) {
            return new TermJumpException(token.resource(), token.term(), e.getMessage(), e);
        }
        return new FenceUnavailableException("could not enter " + token + ": " + e.getMessage(), e);
    }

    private record Recheck(boolean deposed, long mark) {
    }

    /**
     * Asks PostgreSQL on a fresh connection whether the token's term is still current: in session scope by entering
     * it (which also re-enters a connection), in transaction scope by reading the mark (nothing may stay on a pooled
     * server session).
     */
    private Recheck recheck(FencingToken token) {
        try {
            return withFreshConnection("re-check the fence of " + token, config.connectionRecheckAttempts(), c -> {
                if (config.enterScope() == EnterScope.TRANSACTION) {
                    try (PreparedStatement ps = c.prepareStatement(
                            "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = ?")) {
                        ps.setString(1, token.resource());
                        try (ResultSet rs = ps.executeQuery()) {
                            long mark = rs.next() ? rs.getLong(1) : -1;
                            return new Recheck(mark > token.term(), mark);
                        }
                    }
                }
                long mark = enterSession(c, token);
                if (mark == token.term()) {
                    stateOf(c).put(token.resource(), token.term());
                }
                return new Recheck(mark != token.term(), mark);
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
            log.error("could not record rejection of {} (highest accepted {}) in fencing.rejected_write", token, mark,
                    e);
            return false;
        }
    }

    private static void recordRejection(Connection c, FencingToken token, long mark, WriteDescription d) {
        Routines.recordRejection(dsl(c).configuration(), token.resource(), token.term(), mark < 0 ? null : mark,
                token.leaderId(), d == null ? null : d.table(), d == null ? null : d.operation(),
                d == null ? null : d.businessKey(),
                d == null || d.payloadJson() == null ? null : JSONB.valueOf(d.payloadJson()),
                "stale_term", "writer", null, null);
    }

    /** Audits on {@code c} (autocommit). If {@code c} dies before confirming, the row may or may not exist. */
    private boolean audit(Connection c, FencingToken token, long mark, WriteDescription d) {
        try {
            recordRejection(c, token, mark, d);
            return true;
        } catch (RuntimeException e) {
            log.error("could not record rejection of {} (highest accepted {}) in fencing.rejected_write", token, mark,
                    e);
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

    private Map<String, Long> stateOf(Connection c) {
        PGConnection pg;
        try {
            pg = c.unwrap(PGConnection.class);
        } catch (SQLException e) {
            throw new IllegalStateException("FencedWriter needs PostgreSQL connections (pgjdbc); got " + c, e);
        }
        synchronized (entered) {
            return entered.computeIfAbsent(pg, k -> new ConcurrentHashMap<>());
        }
    }

    private static DSLContext dsl(Connection c) {
        return DSL.using(c, SQLDialect.POSTGRES, SETTINGS);
    }

    private static Matcher detail(SQLException e) {
        if (e instanceof org.postgresql.util.PSQLException p && p.getServerErrorMessage() != null
                && p.getServerErrorMessage().getDetail() != null) {
            Matcher m = DETAIL.matcher(p.getServerErrorMessage().getDetail());
            if (m.matches()) {
                return m;
            }
        }
        return null;
    }

    static boolean isConnectionFailure(SQLException e) {
        String s = e.getSQLState();
        return s != null && (s.startsWith("08") || s.equals("57P01") || s.equals("57P02") || s.equals("57P03"));
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

    private static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (SQLException e) {
            log.debug("closing a connection failed", e);
        }
    }
}
