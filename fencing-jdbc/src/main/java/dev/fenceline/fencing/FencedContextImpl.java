package dev.fenceline.fencing;

import org.jooq.DSLContext;
import org.jooq.DeleteUsingStep;
import org.jooq.Field;
import org.jooq.InsertSetMoreStep;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.UpdateSetMoreStep;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

final class FencedContextImpl implements FencedContext {
    static final Field<Long> FENCING_TERM = DSL.field(DSL.name("fencing_term"), SQLDataType.BIGINT);

    private final DSLContext dsl;
    private final FencingToken token;

    FencedContextImpl(DSLContext dsl, FencingToken token) {
        this.dsl = dsl;
        this.token = token;
    }

    @Override
    public DSLContext dsl() {
        return dsl;
    }

    @Override
    public FencingToken token() {
        return token;
    }

    @Override
    public Field<Long> fencingTerm() {
        return FENCING_TERM;
    }

    @Override
    public <R extends Record> UpdateSetMoreStep<R> update(Table<R> table) {
        return dsl.update(table).set(FENCING_TERM, token.term());
    }

    @Override
    public <R extends Record> InsertSetMoreStep<R> insertInto(Table<R> table) {
        return dsl.insertInto(table).set(FENCING_TERM, token.term());
    }

    @Override
    public <R extends Record> DeleteUsingStep<R> deleteFrom(Table<R> table) {
        return dsl.deleteFrom(table);
    }
}
