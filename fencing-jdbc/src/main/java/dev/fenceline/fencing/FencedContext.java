package dev.fenceline.fencing;

import org.jooq.DSLContext;
import org.jooq.DeleteUsingStep;
import org.jooq.Field;
import org.jooq.InsertSetMoreStep;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.UpdateSetMoreStep;

/**
 * What fenced work sees: a jOOQ context on the fenced connection, inside the fenced transaction.
 *
 * <p>Every write to a protected table in this transaction is checked by PostgreSQL (the {@code fencing_guard}
 * trigger) against the session's fence; {@link #update(Table)} and {@link #insertInto(Table)} additionally stamp
 * {@code fencing_term} on the rows they touch (plain {@code dsl()} statements do not). Do not commit,
 * roll back or change the auto-commit mode of the connection yourself.
 */
public interface FencedContext {
    /**
     * jOOQ on the fenced connection (PostgreSQL dialect), inside the transaction. Bound to the thread running the
     * work: use it there, not after the work returned and not from other threads.
     */
    DSLContext dsl();

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
