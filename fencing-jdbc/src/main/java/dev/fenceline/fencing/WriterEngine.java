package dev.fenceline.fencing;

import dev.fenceline.db.Databases;
import dev.fenceline.db.generated.Routines;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fenced writer's transactions: borrows a connection, begins with the writer's own statement, runs the work,
 * commits, and turns a refusal into its exception; plus the writer's steps that stand alone (entering, the warm start,
 * registering a resource, reading a mark). Package-private, not API ({@link FencedWriter} is); the package
 * documentation states the invariants. Its parts: {@link WriterStatements} (the SQL the writer sends itself),
 * {@link PooledConnections}, {@link RejectionAudit} (exceptions and audit), {@link SqlStates}.
 *
 * <p>One mode, and no fence state in Java or on a server session: nothing entered outlives a transaction. Every
 * transaction is: the writer's first statement ({@link WriterStatements#BEGIN_WRITE}: it sets the transaction's
 * timeouts and fencing settings, all local to the transaction, records the transaction and reads the mark), the work,
 * and the writer's COMMIT behind {@code fencing.check_writers_transaction} (one message). The guard on the protected
 * tables enters the transaction at the work's first write to one of them, advancing the mark when the term is newer;
 * the decision is always PostgreSQL's. The only cache is which tables are protected for which resource, a check of the
 * caller's {@link WriteDescription}, not of the fence.
 */
final class WriterEngine {
    private static final Logger log = LoggerFactory.getLogger(WriterEngine.class);
    private static final Settings SETTINGS = Databases.settings();

    private final PooledConnections connections;
    private final WriterStatements statements;
    private final RejectionAudit rejections;
    private final FencedWriterConfig config;
    /** "resource\0table\0operation" known to be protected, and fenced for that operation, for that resource. */
    private final Map<String, Boolean> protectedTables = new ConcurrentHashMap<>();
    /** One jOOQ context for all transactions; its connection is the current thread's fenced connection. */
    private final CurrentConnectionProvider current = new CurrentConnectionProvider();

    private final DSLContext workDsl = DSL.using(new org.jooq.impl.DefaultConfiguration()
            .set(current)
            .set(SQLDialect.POSTGRES)
            .set(SETTINGS)
            .set(new SavepointTransactions()));

    WriterEngine(DataSource dataSource, FencedWriterConfig config) {
        this.connections = new PooledConnections(dataSource);
        this.config = Objects.requireNonNull(config, "config");
        this.statements = new WriterStatements(config);
        this.rejections = new RejectionAudit(connections, config);
    }

    FencedWriterConfig config() {
        return config;
    }

    <T extends @Nullable Object> T transaction(
            FencingToken token, @Nullable WriteDescription description, FencedWork<T> work) {
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(work, "work");
        if (description != null && description.payloadBytes() > config.maxPayloadBytes()) {
            throw new IllegalArgumentException("payloadJson cannot be larger than maxPayloadBytes ("
                    + config.maxPayloadBytes() + " bytes), was " + description.payloadBytes() + " bytes");
        }
        // Dead pooled connections (terminated by an advance) fail fast and are evicted; try fresh ones, bounded.
        int attempts = PooledConnections.ENTER_ATTEMPTS;
        for (int attempt = 1; ; attempt++) {
            Connection c = connections.borrow(token);
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
                        throw rejections.translateEnterFailure(token, e, description);
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
                    PooledConnections.closeQuietly(c);
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
            entered = connections.withFreshConnection("enter " + token, c -> enterAndCommit(c, token));
        } catch (SQLException e) {
            throw rejections.translateEnterFailure(token, e);
        }
        if (entered.mark != token.term()) {
            throw new StaleTermException(token.resource(), token.term(), entered.mark, null, entered.audited, null);
        }
    }

    private record Entered(long mark, boolean audited) {}

    /**
     * {@link WriterStatements#enterStatement()} on {@code c} in an explicit transaction: committed when accepted; when stale (the function
     * returns the higher mark and changed nothing) rolled back and audited on {@code c}, in its own autocommit
     * statement. Retried on a fresh connection when {@code c} dies: entering at the same term again is harmless.
     */
    private Entered enterAndCommit(Connection c, FencingToken token) throws SQLException {
        long mark;
        c.setAutoCommit(false);
        try {
            try (PreparedStatement ps = c.prepareStatement(statements.enterStatement())) {
                ps.setString(1, WriterStatements.millis(config.idleInTransactionSessionTimeout()));
                ps.setString(2, token.resource());
                ps.setLong(3, token.term());
                ps.setString(4, token.leaderId());
                try (ResultSet rs = WriterStatements.selectAfterSet(ps, "entering")) {
                    mark = rs.getLong(2);
                }
            }
            if (mark == token.term()) {
                c.commit();
            } else {
                c.rollback();
            }
        } catch (SQLException | RuntimeException e) {
            PooledConnections.rollbackQuietly(c);
            throw e;
        } finally {
            PooledConnections.resetAutoCommit(c);
        }
        if (mark == token.term()) {
            return new Entered(mark, false);
        }
        return new Entered(mark, rejections.audit(c, token, mark, null));
    }

    /** See {@code FencedWriter.warmUp}: everything on the first commit's path, rolled back. */
    java.time.Duration warmUp(String resource) {
        FencingToken token = FencingToken.of(resource, 1); // validates the name
        long t0 = System.nanoTime();
        try {
            connections.withFreshConnection("warm up " + resource, c -> {
                c.setAutoCommit(false);
                try {
                    // the writer's own first statement, as every transaction sends it (it reads the mark too)
                    Long mark = statements.beginWrite(c, token);
                    WarmUp.run(c, workDsl, current, token, mark);
                    // the writer's own steps before its COMMIT: the driver's state check, and the two-statement
                    // message with the COMMIT (prepared, not run: pgjdbc parses it into a composite query)
                    WriterStatements.checkStillTheWritersTransaction(c, token);
                    c.prepareStatement("SELECT fencing.check_writers_transaction(); COMMIT")
                            .close();
                } finally {
                    PooledConnections.rollbackQuietly(c);
                    PooledConnections.resetAutoCommit(c);
                }
                return true; // warmed: nothing else to report, and a step's result is never null
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
            return connections.withFreshConnection(
                    "register resource " + resource,
                    c -> Routines.registerResource(PooledConnections.dsl(c).configuration(), resource));
        } catch (SQLException e) {
            throw rejections.translateEnterFailure(token, e);
        }
    }

    long highestAccepted(String resource) {
        FencingToken.of(resource, 1);
        // Empty: the resource is not registered (readMark's null; a step's result itself is never null).
        Optional<Long> mark;
        try {
            mark = connections.withFreshConnection(
                    "read the mark of " + resource, c -> Optional.ofNullable(WriterStatements.readMark(c, resource)));
        } catch (SQLException e) {
            throw new FenceUnavailableException("could not read the mark of " + resource + ": " + e.getMessage(), e);
        }
        return mark.orElseThrow(() -> new UnknownResourceException(resource, null));
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

    private <T extends @Nullable Object> T runTransaction(
            Connection c,
            FencingToken token,
            @Nullable WriteDescription description,
            FencedWork<T> work,
            boolean mayRetry) {
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
                    if (SqlStates.fixFor(e) != null) {
                        // the writer's own statement cannot run here (functions missing, a login without the
                        // rights): say so, with the fix, rather than as a failure of the work
                        throw new FenceUnavailableException(
                                "could not begin the fenced transaction of " + token + ": " + e.getMessage(), e);
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
                WriterStatements.checkStillTheWritersTransaction(c, token);
                committing = true;
                WriterStatements.commitIfStillTheWriters(c);
                return result;
            } catch (DeadBeforeWork dead) {
                throw dead;
            } catch (Throwable t) {
                PooledConnections.rollbackQuietly(c);
                // A rejection is recorded on this connection, back in autocommit: a pool with no other connection
                // free (a pool of one, or a busy one) must not lose the audit row to its connection timeout.
                PooledConnections.resetAutoCommit(c);
                throw rejections.translate(t, committing, token, description, c);
            } finally {
                PooledConnections.resetAutoCommit(c);
            }
        } finally {
            current.restore(previous);
            PooledConnections.closeQuietly(c);
        }
    }

    /**
     * Begins the transaction with {@link WriterStatements#BEGIN_WRITE}. A mark above the token's term is certain staleness (marks only
     * rise): {@link RejectionAudit.StaleEntering}, rolled back and audited by the caller. No mark row: {@link UnknownResourceException}.
     * A mark below the term is advanced here, before the work.
     */
    private void begin(Connection c, FencingToken token) throws SQLException {
        Long first = statements.beginWrite(c, token);
        if (first == null) {
            throw new UnknownResourceException(token.resource(), null);
        }
        if (first > token.term()) {
            throw new RejectionAudit.StaleEntering(first);
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
                        throw new RejectionAudit.StaleEntering(mark);
                    }
                }
            }
        }
    }

    /**
     * The description's table must be protected for the token's resource. Its operation needs no check: the trigger
     * fires for every operation, and a transaction that carries a term (the writer's always does) is fenced on all of
     * them, also on those the table leaves to writers without a term.
     */
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
}
