package dev.fenceline.fencing;

import java.sql.Connection;
import org.jooq.DSLContext;
import org.jooq.DeleteUsingStep;
import org.jooq.Field;
import org.jooq.InsertSetMoreStep;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.UpdateSetMoreStep;

/**
 * What fenced work sees: the fenced connection, inside the fenced transaction, through jOOQ ({@link #dsl()}) or plain
 * JDBC ({@link #connection()}).
 *
 * <p>Every write to a protected table in this transaction is checked by PostgreSQL (the {@code fencing_guard}
 * statement trigger) against the transaction's term, whichever way it is sent: jOOQ and plain JDBC are fenced alike.
 * The {@code fencing_term} column that {@code fencing.protect_table} adds is not part of that check; it records which
 * term wrote a row. {@link #update(Table)} and {@link #insertInto(Table)} stamp it on the rows they touch; plain
 * {@code dsl()} and JDBC statements leave it alone unless they set it themselves (to {@link #term()}). Do not commit,
 * roll back or change the auto-commit mode of the connection yourself.
 */
public interface FencedContext {
    /**
     * jOOQ on the fenced connection (PostgreSQL dialect), inside the transaction. Bound to the thread running the
     * work: use it there, not after the work returned and not from other threads. Its {@code transaction(...)} makes a
     * savepoint of the fenced transaction. The connection jOOQ hands out itself ({@code connection(...)},
     * {@code connectionResult(...)}) is not guarded like {@link #connection()}: do not end the transaction through
     * it. If the work does, the writer does not commit what follows and throws {@link IllegalStateException}, but what
     * the work wrote before it ended the transaction may be committed.
     */
    DSLContext dsl();

    /**
     * The fenced JDBC connection, inside the transaction, for code that does not use jOOQ. Statements on it are fenced
     * like those of {@link #dsl()}. To stamp rows, set {@code fencing_term} to {@link #term()} yourself, e.g.
     * {@code INSERT INTO payment (id, amount, fencing_term) VALUES (?, ?, ?)}.
     *
     * <p>The writer owns the transaction: {@code commit()}, {@code rollback()}, {@code setAutoCommit(...)},
     * {@code setTransactionIsolation(...)}, {@code close()} and {@code abort(...)} throw {@link java.sql.SQLException}
     * (savepoints are allowed). Like {@link #dsl()}, bound to the thread running the work and to the work's duration:
     * any call after the work returned, or from another thread, throws {@link java.sql.SQLException}. Objects reached
     * from it lead back to this view; {@code unwrap} gives guarded interfaces only. Do not end the transaction with SQL
     * ({@code COMMIT}, {@code ROLLBACK}, {@code PREPARE TRANSACTION}, ...), here or through {@link #dsl()}: the term is
     * the transaction's, so writes to protected tables after such SQL are rejected ({@link NotFencedException}); a
     * transaction found failed, ended or replaced when the work returns is reported with
     * {@link IllegalStateException}, never as committed, but what the work wrote before it ended the transaction may
     * have been committed on its own.
     */
    Connection connection();

    FencingToken token();

    /** The term this transaction carries. */
    default long term() {
        return token().term();
    }

    default String resource() {
        return token().resource();
    }

    /** The {@code fencing_term} column of protected tables. */
    Field<Long> fencingTerm();

    /** {@code UPDATE table SET fencing_term = <term>}, ready for more {@code set(...)} and a {@code where(...)}. */
    <R extends Record> UpdateSetMoreStep<R> update(Table<R> table);

    /** {@code INSERT INTO table SET fencing_term = <term>}, ready for more {@code set(...)}. */
    <R extends Record> InsertSetMoreStep<R> insertInto(Table<R> table);

    /** {@code DELETE FROM table} (nothing to stamp; the trigger still fences it). */
    <R extends Record> DeleteUsingStep<R> deleteFrom(Table<R> table);
}
