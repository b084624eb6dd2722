package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.execute;
import static dev.fenceline.fencing.AdversaryRole.sqlState;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What fenced work can do with the JDBC connection {@link FencedContext#connection()} hands out, run by an ordinary
 * {@code fencing_app} login ({@link AdversaryRole}): the writer's pools log in as that role, so nothing relies on
 * powers a deployed service would not have.
 *
 * <p>The properties: a fenced transaction commits as a whole or not at all, and is reported as committed only if it
 * was; work that ends the writer's transaction itself (COMMIT sent as SQL) commits what it wrote before under its term,
 * and nothing after it (the term is transaction-local), and is reported as failed; no write carrying a deposed term
 * commits; every rejection is audited exactly once. Each test has its own resource and table ({@code id bigint, note text},
 * rows 1..3 with note {@code initial}, made by {@link AdversaryRole#protectedTable}). The deposing advance is made on a
 * separate connection of the same role, in the work's own thread, so the order of events is forced without sleeping.
 *
 * <p>A stale write the work rolls back or swallows: {@link StaleWritesInsideTheWorkAreAuditedExactlyOnceIT}; what the
 * writer's warm-up leaves on the pooled session: {@link WarmUpLeavesNothingOnThePooledSessionIT}.
 */
class WorkCannotEscapeTheWritersTransactionIT extends AdversaryWriterScene {

    private ExecutorService other;

    @BeforeAll
    void startTheOtherThread() {
        other = Executors.newSingleThreadExecutor();
    }

    @AfterAll
    void stopTheOtherThread() throws InterruptedException {
        if (other != null) {
            other.shutdownNow();
            other.awaitTermination(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
    }

    // ---- the calls that belong to the writer ----------------------------------------------------------------

    @Test
    void connectionRefusesEveryCallThatWouldEndOrReshapeTheWritersTransaction() {
        String table = table("refused_calls");
        Throwable failed = runAtTermFive(table, ctx -> {
            Connection c = ctx.connection();
            update(c, table, 1, "written before the refused calls", 5);
            assertThat(catchThrowable(c::commit)).as("commit()").isInstanceOf(SQLException.class);
            assertThat(catchThrowable(() -> c.rollback())).as("rollback()").isInstanceOf(SQLException.class);
            assertThat(catchThrowable(() -> c.setAutoCommit(true)))
                    .as("setAutoCommit(true)")
                    .isInstanceOf(SQLException.class);
            assertThat(catchThrowable(() -> c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE)))
                    .as("setTransactionIsolation")
                    .isInstanceOf(SQLException.class);
            assertThat(catchThrowable(c::close)).as("close()").isInstanceOf(SQLException.class);
            assertThat(catchThrowable(() -> c.abort(Runnable::run)))
                    .as("abort()")
                    .isInstanceOf(SQLException.class);
            throw new IllegalStateException("the work fails after its write");
        });
        assertThat(failed).hasMessage("the work fails after its write");
        assertThat(note(table, 1)).as("row 1 after the work failed").isEqualTo("initial");
    }

    /**
     * The objects {@link FencedContext#connection()} hands out lead back to a connection ({@code unwrap},
     * {@code Statement.getConnection()}, {@code ResultSet.getStatement()}, {@code DatabaseMetaData.getConnection()},
     * {@code Array.getResultSet()}): that way must lead to the guarded view, never to the pool's connection, whose
     * {@code commit()} would commit the work's first writes on their own.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "unwrapConnection",
                "unwrapPgConnectionClass",
                "unwrapBaseConnection",
                "statementGetConnection",
                "resultSetGetStatement",
                "metaDataGetConnection",
                "arrayResultSet",
                "arrayAsObjectResultSet"
            })
    void objectsReachedFromTheConnectionCannotCommitPartOfAFencedTransaction(String route) {
        String table = table("partial_" + route.toLowerCase());
        Throwable failed = runAtTermFive(table, ctx -> {
            Connection c = ctx.connection();
            update(c, table, 1, "committed by the work itself via " + route, 5);
            Throwable commit = catchThrowable(() -> reachedConnection(c, route).commit());
            assertThat(commit).as("commit() via %s", route).isInstanceOf(SQLException.class);
            throw new IllegalStateException("the work fails after its write");
        });
        assertThat(failed).hasMessage("the work fails after its write");
        assertThat(note(table, 1))
                .as("row 1 after the work (which tried to commit via %s) failed", route)
                .isEqualTo("initial");
    }

    private static Connection reachedConnection(Connection c, String route) throws SQLException {
        switch (route) {
            case "unwrapConnection":
                return c.unwrap(Connection.class);
            case "unwrapPgConnectionClass":
                return c.unwrap(org.postgresql.jdbc.PgConnection.class);
            case "unwrapBaseConnection":
                return c.unwrap(org.postgresql.core.BaseConnection.class);
            case "statementGetConnection":
                return c.createStatement().getConnection();
            case "resultSetGetStatement":
                return c.createStatement()
                        .executeQuery("SELECT 1")
                        .getStatement()
                        .getConnection();
            case "metaDataGetConnection":
                return c.getMetaData().getConnection();
            default:
                try (Statement s = c.createStatement();
                        java.sql.ResultSet rs = s.executeQuery("SELECT ARRAY[1, 2]")) {
                    rs.next();
                    java.sql.Array array =
                            route.equals("arrayResultSet") ? rs.getArray(1) : (java.sql.Array) rs.getObject(1);
                    return array.getResultSet().getStatement().getConnection();
                }
        }
    }

    /**
     * SQL that ends the transaction (COMMIT, END, COMMIT AND CHAIN, COMMIT inside a multi-statement string), sent
     * through the connection's statements, its prepared statements, a batch or jOOQ, is not scanned for: it reaches
     * PostgreSQL and commits what the work wrote before it. That much is fenced all the same (written under term 5,
     * its fence lock held until that commit), only outside the writer's all-or-nothing. What such a COMMIT cannot do
     * is carry the term on: the writer's term, resource and leader id are transaction-local, so the work's next write
     * to a protected table, in whatever transaction the connection is in now, has no term and is rejected (FL002), and
     * the writer reports the work as failed (IllegalStateException), not committed. Nothing written after the COMMIT
     * is committed.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"statement", "prepared", "batch", "dsl", "multi-statement", "commit-and-chain"})
    void sqlThatEndsTheTransactionLeavesTheRestOfTheWorkWithoutATermAndIsNotReportedAsCommitted(String route) {
        String table = table("commit_sql_" + route.replace('-', '_'));
        assertACommitSentByTheWorkEndsItsTerm(table, route, ctx -> {
            Connection c = ctx.connection();
            switch (route) {
                case "statement" -> execute(c, "COMMIT");
                case "prepared" -> c.prepareStatement("commit").execute();
                case "batch" -> {
                    try (Statement st = c.createStatement()) {
                        st.addBatch("END");
                        st.executeBatch();
                    }
                }
                case "dsl" -> ctx.dsl().execute("COMMIT");
                case "multi-statement" -> execute(c, "SELECT 1; /* done */ COMMIT; BEGIN");
                default -> execute(c, "COMMIT AND CHAIN");
            }
        });
    }

    /**
     * Runs, at term 5: a write of row 1, {@code sendCommit} (the work ending the writer's transaction itself), and a
     * write of row 2. Row 1 is committed by the work's own COMMIT; the write of row 2 finds no term (FL002) and
     * commits nothing; the writer reports IllegalStateException.
     */
    private void assertACommitSentByTheWorkEndsItsTerm(String table, String how, FencedAction sendCommit) {
        AtomicReference<Throwable> afterCommit = new AtomicReference<>();
        Throwable failed = runAtTermFive(table, ctx -> {
            update(ctx.connection(), table, 1, "written before the COMMIT", 5);
            sendCommit.run(ctx);
            afterCommit.set(catchThrowable(() -> update(ctx.connection(), table, 2, "written after the COMMIT", 5)));
        });
        assertThat(sqlState(afterCommit.get()))
                .as("the work's write after its COMMIT via %s: %s", how, afterCommit.get())
                .isEqualTo("FL002");
        assertThat(failed)
                .as("the writer's outcome for work that committed via %s", how)
                .isInstanceOf(IllegalStateException.class);
        assertThat(note(table, 2))
                .as("row 2, written after the COMMIT via %s", how)
                .isEqualTo("initial");
        assertThat(note(table, 1))
                .as("row 1, committed by the work's own COMMIT via %s (under term 5)", how)
                .isEqualTo("written before the COMMIT");
    }

    /**
     * The driver's interfaces that {@code unwrap} hands out (wrapped) have ways to send SQL that are not the JDBC
     * {@code execute*} methods: {@code BaseConnection.execSQLUpdate} and {@code PGConnection.getCopyAPI()} (a
     * {@code CopyManager}). A COMMIT sent that way ends the writer's transaction like one sent as SQL: the rest of the
     * work has no term, and the writer does not report it as committed.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"execSQLUpdate", "copyIn"})
    void aCommitSentThroughADriverInterfaceReachedByUnwrapLeavesTheRestOfTheWorkWithoutATerm(String route) {
        String table = table("driver_commit_" + route.toLowerCase());
        assertACommitSentByTheWorkEndsItsTerm(table, route, ctx -> {
            Connection c = ctx.connection();
            // CopyManager reports an error (the server answers a COMMIT, not a copy), after the server ran it.
            Throwable swallowed = catchThrowable(() -> {
                switch (route) {
                    case "execSQLUpdate" ->
                        c.unwrap(org.postgresql.core.BaseConnection.class).execSQLUpdate("COMMIT");
                    default ->
                        c.unwrap(org.postgresql.PGConnection.class)
                                .getCopyAPI()
                                .copyIn("COMMIT", new java.io.ByteArrayInputStream(new byte[0]));
                }
            });
        });
    }

    /**
     * {@code BaseConnection.getQueryExecutor()} works on the pool's connection past the view (and past the work's
     * thread and lifetime): it is not handed out, so nothing can be sent through it, and the work's failure rolls back
     * everything it wrote.
     */
    @Test
    void theDriversQueryExecutorIsNotHandedOutToTheWork() {
        String table = table("driver_query_executor");
        Throwable failed = runAtTermFive(table, ctx -> {
            Connection c = ctx.connection();
            update(c, table, 1, "written before asking for the query executor", 5);
            Throwable executor = catchThrowable(
                    () -> c.unwrap(org.postgresql.core.BaseConnection.class).getQueryExecutor());
            // declared without SQLException, so the proxy's refusal arrives wrapped (UndeclaredThrowableException)
            assertThat(executor)
                    .as("getQueryExecutor()")
                    .isNotNull()
                    .hasStackTraceContaining("getQueryExecutor() is not allowed");
            throw new IllegalStateException("the work fails after its write");
        });
        assertThat(failed).hasMessage("the work fails after its write");
        assertThat(note(table, 1)).as("row 1 after the work failed").isEqualTo("initial");
    }

    /**
     * A PREPARE TRANSACTION or a ROLLBACK sent as SQL ends the writer's transaction like a COMMIT: the work's next
     * write has no term (FL002) and the writer reports IllegalStateException; nothing of the work is committed (the
     * prepared transaction holds only what it wrote before, and is rolled back here). A ROLLBACK TO a savepoint does not
     * end it: the transaction goes on at its term.
     */
    @Test
    void prepareOrRollbackSentAsSqlLeavesTheRestOfTheWorkWithoutATermButRollingBackToASavepointDoesNot() {
        String table = table("rollback_sql");
        String gid = table + "-branch";
        for (String end : new String[] {"PREPARE TRANSACTION '" + gid + "'", "ROLLBACK"}) {
            AtomicReference<Throwable> afterEnd = new AtomicReference<>();
            Throwable failed;
            try {
                failed = runAtTermFive(table, ctx -> {
                    execute(ctx.connection(), end);
                    afterEnd.set(catchThrowable(() -> update(ctx.connection(), table, 1, "after " + end, 5)));
                });
            } finally {
                AdversaryRole.rollbackPreparedTransactions(db);
            }
            assertThat(sqlState(afterEnd.get()))
                    .as("the work's write after %s: %s", end, afterEnd.get())
                    .isEqualTo("FL002");
            assertThat(failed).as("the writer's outcome after %s", end).isInstanceOf(IllegalStateException.class);
            assertThat(note(table, 1)).as("row 1 after %s", end).isEqualTo("initial");
        }
        Throwable ok = runAtTermFive(table, ctx -> {
            Connection c = ctx.connection();
            execute(c, "SAVEPOINT s");
            update(c, table, 1, "undone", 5);
            execute(c, "ROLLBACK TO SAVEPOINT s");
            update(c, table, 2, "kept", 5);
        });
        assertThat(ok).isNull();
        assertThat(note(table, 1)).isEqualTo("initial");
        assertThat(note(table, 2)).isEqualTo("kept");
    }

    /**
     * The work of a nested fenced transaction (same thread) uses the outer work's context by mistake. Its statements
     * must not run in the inner transaction: they would commit with it although the outer transaction rolls back.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"dsl", "update", "insertInto", "deleteFrom"})
    void outerContextUsedInsideANestedTransactionCannotCommitWithIt(String call) {
        String table = table("nested_" + call.toLowerCase());
        org.jooq.Table<org.jooq.Record> t = org.jooq.impl.DSL.table(org.jooq.impl.DSL.name(table));
        org.jooq.Field<Long> id = org.jooq.impl.DSL.field(org.jooq.impl.DSL.name("id"), Long.class);
        org.jooq.Field<String> noteField = org.jooq.impl.DSL.field(org.jooq.impl.DSL.name("note"), String.class);
        FencingToken t5 = FencingToken.of(resourceOf(table), 5, "a");
        try (HikariDataSource pool = Databases.dataSource(DatabaseConfig.builder(db.jdbcUrl())
                .username(adversary.name())
                .maximumPoolSize(2)
                .poolName("nested-" + TABLES.incrementAndGet())
                .build())) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            Throwable failed = catchThrowable(() -> writer.run(t5, outer -> {
                Throwable swallowed = catchThrowable(() -> writer.run(t5, inner -> {
                    switch (call) {
                        case "dsl" ->
                            outer.dsl().execute("UPDATE " + table + " SET note = 'outer, via inner' WHERE id = 1");
                        case "update" ->
                            outer.update(t)
                                    .set(noteField, "outer, via inner")
                                    .where(id.eq(1L))
                                    .execute();
                        case "insertInto" ->
                            outer.insertInto(t)
                                    .set(id, 4L)
                                    .set(noteField, "outer, via inner")
                                    .execute();
                        default -> outer.deleteFrom(t).where(id.eq(1L)).execute();
                    }
                }));
                throw new IllegalStateException("the outer work fails");
            }));
            assertThat(failed).hasMessage("the outer work fails");
        }
        assertThat(Fixtures.text(db, "SELECT string_agg(id || ':' || note, ',' ORDER BY id) FROM " + table))
                .as("rows after the outer transaction (whose context %s() was used in the inner one) failed", call)
                .isEqualTo("1:initial,2:initial,3:initial");
    }

    // ---- escaping the work ----------------------------------------------------------------------------------

    @Test
    void connectionKeptAfterTheWorkOrUsedFromAnotherThreadRefusesEveryCall() throws Exception {
        String table = table("escape_view");
        FencingToken t5 = FencingToken.of(resourceOf(table), 5, "a");
        AtomicReference<Connection> kept = new AtomicReference<>();
        AtomicReference<FencedContext> keptContext = new AtomicReference<>();
        try (HikariDataSource pool = pool("leader-a")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            writer.run(t5, ctx -> {
                kept.set(ctx.connection());
                keptContext.set(ctx);
                Throwable fromOtherThread = other.submit(() ->
                                catchThrowable(() -> update(ctx.connection(), table, 1, "from another thread", 5)))
                        .get();
                assertThat(fromOtherThread)
                        .as("connection() from another thread")
                        .isInstanceOf(SQLException.class);
                Throwable dslFromOtherThread = other.submit(() -> catchThrowable(() -> ctx.dsl()
                                .execute("UPDATE " + table + " SET note = 'dsl from another thread' WHERE id = 1")))
                        .get();
                assertThat(dslFromOtherThread).as("dsl() from another thread").isNotNull();
            });
            assertThat(catchThrowable(() -> update(kept.get(), table, 1, "after the work", 5)))
                    .as("connection() kept after the work")
                    .isInstanceOf(SQLException.class);
            assertThat(catchThrowable(() -> keptContext
                            .get()
                            .dsl()
                            .execute("UPDATE " + table + " SET note = 'dsl after the work' WHERE id = 1")))
                    .as("dsl() kept after the work")
                    .isNotNull();
        }
        assertThat(note(table, 1)).isEqualTo("initial");
    }

    @Test
    void statementKeptAfterTheWorkCannotWrite() {
        String table = table("escape_statement");
        FencingToken t5 = FencingToken.of(resourceOf(table), 5, "a");
        AtomicReference<Statement> kept = new AtomicReference<>();
        try (HikariDataSource pool = pool("leader-a")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            writer.run(t5, ctx -> kept.set(ctx.connection().createStatement()));
            assertThat(catchThrowable(() -> kept.get()
                            .executeUpdate(
                                    "UPDATE " + table + " SET note = 'kept statement', fencing_term = 5 WHERE id = 1")))
                    .as("a Statement kept after the work")
                    .isInstanceOf(SQLException.class);
        }
        assertThat(note(table, 1)).isEqualTo("initial");
    }

    /**
     * What {@code unwrap(Connection.class)} hands out is the view again, bound to the work: kept after it, it refuses
     * every call. The physical session behind it would not help either: the writer's term ended with its transaction,
     * so nothing written there after the advance to 6 carries term 5.
     */
    @Test
    void unwrappedConnectionKeptAfterTheWorkCannotWriteOnceItsTermIsDeposed() throws Exception {
        String table = table("escape_raw");
        String resource = resourceOf(table);
        FencingToken t5 = FencingToken.of(resource, 5, "a");
        AtomicReference<Connection> raw = new AtomicReference<>();
        try (HikariDataSource pool = pool("leader-a")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            writer.run(t5, ctx -> raw.set(ctx.connection().unwrap(Connection.class)));
            advance(resource, 6);
            Throwable late = catchThrowable(() -> update(raw.get(), table, 1, "escaped raw, term 5 after 6", 5));
            assertThat(late)
                    .as("a write on the escaped connection of a term-5 transaction after the advance to 6")
                    .isNotNull();
        }
        assertThat(note(table, 1)).isEqualTo("initial");
    }

    // ---- session state changed through the connection -------------------------------------------------------

    /**
     * Session commands the work can send through the connection, committed with the work (some, like a session-level
     * {@code SET fencing.term}, stay on the server session after it). None of them may let a term-5 transaction on that
     * session write after another leader advanced to 6: the writer's next transaction at 5 is rejected, persists
     * nothing and is audited once.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "SELECT pg_advisory_unlock_all()",
                "RESET ALL",
                "DISCARD ALL",
                "SET fencing.term = '5'",
                "SET SESSION AUTHORIZATION DEFAULT",
                "SET ROLE fencing_app",
                "RESET ROLE",
                "SELECT set_config('fencing.resource', '', false)"
            })
    void sessionCommandsThroughTheConnectionCannotKeepADeposedTermWriting(String command) throws Exception {
        String table = table("session_cmd");
        String resource = resourceOf(table);
        FencingToken t5 = FencingToken.of(resource, 5, "a");
        try (HikariDataSource pool = pool("leader-a")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            // Some commands are refused inside a transaction (DISCARD ALL): then the transaction is rolled back.
            Throwable swallowed = catchThrowable(() -> writer.run(t5, ctx -> {
                update(ctx.connection(), table, 3, "term 5 with " + command, 5);
                execute(ctx.connection(), command);
            }));
            advance(resource, 6);
            Throwable late = catchThrowable(
                    () -> writer.run(t5, ctx -> update(ctx.connection(), table, 1, "term 5 after 6", 5)));
            assertThat(late).as("term 5 after 6, after %s", command).isInstanceOf(StaleTermException.class);
            assertThat(((StaleTermException) late).audited()).isTrue();
        }
        assertThat(note(table, 1)).isEqualTo("initial");
        assertThat(audits(resource, 5))
                .as("audit rows of the rejected term-5 transaction")
                .isEqualTo(1);
    }

    // ---- ending the transaction by other routes: PREPARE, jOOQ, procedures ----------------------------------

    /**
     * The work prepares its own transaction (PREPARE TRANSACTION through the connection): the writer's COMMIT then has
     * nothing to commit and returns, so the caller is told "committed" while the write waits, prepared, for whoever
     * resolves it (and blocks every advance of the resource until then). Nothing of the work may be reported as
     * committed unless it is.
     */
    @Test
    void workThatPreparesItsTransactionIsNotReportedAsCommitted() {
        String table = table("prepared_work");
        String gid = table + "-branch";
        FencingToken t5 = FencingToken.of(resourceOf(table), 5, "a");
        Throwable failed;
        long leftPrepared;
        try (HikariDataSource pool = pool("leader-a")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            failed = catchThrowable(() -> writer.run(t5, ctx -> {
                update(ctx.connection(), table, 1, "prepared by the work", 5);
                execute(ctx.connection(), "PREPARE TRANSACTION '" + gid + "'");
            }));
        } finally {
            leftPrepared = count(db, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = '" + gid + "'");
            AdversaryRole.rollbackPreparedTransactions(db);
        }
        assertThat(note(table, 1)).isEqualTo("initial");
        assertThat(failed)
                .as("the writer's outcome for work that left its transaction prepared (%s prepared)", leftPrepared)
                .isInstanceOf(IllegalStateException.class);
    }

    /**
     * {@code FencedContext.dsl()} hands jOOQ the fenced connection itself, and jOOQ hands it on to the work
     * ({@code DSLContext.connection}): its {@code commit()} is not refused. The work ends the writer's transaction that
     * way and goes on in a new one, which leaves the driver's state "in a transaction" as if nothing happened. The
     * writer must not report that new transaction as the fenced one committed: its check before COMMIT
     * ({@code fencing.check_writers_transaction}) finds another transaction than the one its first statement began, so
     * it commits nothing more, and says what happened. What the work wrote before it ended the transaction was
     * committed by the work, outside the writer's all-or-nothing, and the test says so.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"commit-and-chain", "commit"})
    void workThatEndsTheWritersTransactionUnseenIsNotReportedAsCommitted(String route) {
        String table = table("unseen_" + route.replace('-', '_'));
        String before = "UPDATE " + table + " SET note = 'before the end', fencing_term = 5 WHERE id = 1";
        String after = "UPDATE " + table + " SET note = 'after the end', fencing_term = 5 WHERE id = 2";
        AtomicReference<Throwable> afterEnd = new AtomicReference<>();
        Throwable failed;
        try (HikariDataSource pool = pool("leader-a")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            failed = catchThrowable(() -> writer.run(FencingToken.of(resourceOf(table), 5, "a"), ctx -> {
                ctx.dsl().execute(before);
                switch (route) {
                    case "commit-and-chain" -> ctx.dsl().connection(raw -> execute(raw, "COMMIT AND CHAIN"));
                    default -> ctx.dsl().connection(Connection::commit);
                }
                ctx.dsl().execute("SELECT 1"); // goes on in whatever transaction the connection is in now
                // A write there has no term; the work undoes the failure, so the new transaction is healthy at COMMIT.
                ctx.dsl().execute("SAVEPOINT after_end");
                afterEnd.set(catchThrowable(() -> ctx.dsl().execute(after)));
                ctx.dsl().execute("ROLLBACK TO SAVEPOINT after_end");
            }));
        }
        assertThat(sqlState(afterEnd.get()))
                .as("the work's write in the new transaction: %s", afterEnd.get())
                .isEqualTo("FL002");
        assertThat(failed)
                .as("the writer's outcome")
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("ended the writer's transaction");
        assertThat(note(table, 1))
                .as("committed by the work itself, before the writer's COMMIT")
                .isEqualTo("before the end");
        assertThat(note(table, 2)).as("written in the new transaction").isEqualTo("initial");
    }

    /**
     * jOOQ's transaction API on {@code ctx.dsl()} would commit the fenced connection (its default provider does):
     * inside fenced work a jOOQ transaction is a savepoint instead. Its writes commit or roll back with the writer's
     * transaction, and a jOOQ transaction that fails rolls back to its savepoint while the rest of the work commits.
     */
    @Test
    void jooqTransactionInsideTheWorkIsASavepointOfTheWritersTransaction() {
        String table = table("jooq_transaction");
        String row = "UPDATE " + table + " SET note = ?, fencing_term = 5 WHERE id = ?";
        Throwable failed = runAtTermFive(table, ctx -> {
            ctx.dsl().transaction(nested -> org.jooq.impl.DSL.using(nested).execute(row, "jOOQ transaction", 1));
            throw new IllegalStateException("the work fails after its jOOQ transaction");
        });
        assertThat(failed).hasMessage("the work fails after its jOOQ transaction");
        assertThat(note(table, 1)).as("row 1 after the work failed").isEqualTo("initial");

        Throwable committed = runAtTermFive(table, ctx -> {
            ctx.dsl().execute(row, "the work", 2);
            Throwable inner = catchThrowable(() -> ctx.dsl().transaction(nested -> {
                org.jooq.impl.DSL.using(nested).execute(row, "failed jOOQ transaction", 1);
                throw new IllegalStateException("the jOOQ transaction fails");
            }));
            assertThat(inner).hasMessageContaining("the jOOQ transaction fails");
        });
        assertThat(committed).isNull();
        assertThat(note(table, 1)).as("row 1, rolled back to the savepoint").isEqualTo("initial");
        assertThat(note(table, 2)).as("row 2, the rest of the work").isEqualTo("the work");
    }

    /**
     * Procedures and DO blocks may COMMIT; but inside a transaction block (the writer's, autocommit off) PostgreSQL
     * refuses their COMMIT (2D000), so they cannot end the writer's transaction: the work fails and nothing of it is
     * committed.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"CALL", "DO"})
    void procedureOrDoBlockThatCommitsCannotEndTheWritersTransaction(String route) {
        String table = table("server_commit_" + route.toLowerCase());
        String procedure = table + "_commit";
        Fixtures.sql(
                db,
                "CREATE PROCEDURE public." + procedure + "() LANGUAGE plpgsql AS $$ BEGIN COMMIT; END $$",
                "GRANT EXECUTE ON PROCEDURE public." + procedure + "() TO PUBLIC");
        Throwable failed = runAtTermFive(table, ctx -> {
            update(ctx.connection(), table, 1, "written before the " + route, 5);
            execute(
                    ctx.connection(),
                    route.equals("CALL") ? "CALL public." + procedure + "()" : "DO $$ BEGIN COMMIT; END $$");
        });
        assertThat(sqlState(failed)).as("%s", failed).isEqualTo("2D000");
        assertThat(note(table, 1)).isEqualTo("initial");
    }
}
