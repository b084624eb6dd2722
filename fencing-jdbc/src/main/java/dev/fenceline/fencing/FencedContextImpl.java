package dev.fenceline.fencing;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Set;
import org.jooq.DSLContext;
import org.jooq.DeleteUsingStep;
import org.jooq.Field;
import org.jooq.InsertSetMoreStep;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.UpdateSetMoreStep;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/** One per fenced transaction; {@link #end()} once the work has returned or thrown. */
final class FencedContextImpl implements FencedContext {
    static final Field<Long> FENCING_TERM = DSL.field(DSL.name("fencing_term"), SQLDataType.BIGINT);

    /** Calls that would end or reshape the writer's transaction behind its back. */
    private static final Set<String> WRITERS_CALLS = Set.of("commit", "rollback", "setAutoCommit",
            "setTransactionIsolation", "close", "abort");

    private final DSLContext dsl;
    private final FencingToken token;
    private final Connection fenced;
    private final Thread owner = Thread.currentThread();
    /** Written and read by the owner thread only (other threads are refused before they read it). */
    private boolean ended;
    private Connection view;

    FencedContextImpl(DSLContext dsl, FencingToken token, Connection fenced) {
        this.dsl = dsl;
        this.token = token;
        this.fenced = fenced;
    }

    /** The work is over: {@link #connection()} refuses every further call. */
    void end() {
        ended = true;
    }

    @Override
    public DSLContext dsl() {
        return dsl;
    }

    @Override
    public Connection connection() {
        if (view == null) {   // created on first use only: the jOOQ-only hot path allocates no proxy
            view = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
                    new Class<?>[] {Connection.class}, new GuardedConnection());
        }
        return view;
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

    /** The fenced connection minus the calls that belong to the writer, usable only by the work while it runs. */
    private final class GuardedConnection implements InvocationHandler {
        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            String name = method.getName();
            if (method.getDeclaringClass() == Object.class) {
                return switch (name) {
                    case "equals" -> proxy == args[0];
                    case "hashCode" -> System.identityHashCode(proxy);
                    default -> "FencedContext.connection() of " + token;
                };
            }
            if (Thread.currentThread() != owner || ended) {
                throw new SQLException("FencedContext.connection() used outside its fenced transaction or on another"
                        + " thread: it is bound to the thread running the work of FencedWriter.transaction/run");
            }
            boolean rollbackToSavepoint = name.equals("rollback") && args != null && args.length == 1;
            if (WRITERS_CALLS.contains(name) && !rollbackToSavepoint) {
                throw new SQLException("FencedContext.connection()." + name + "(...) is not allowed: the fenced writer"
                        + " commits, rolls back and returns the connection itself (throw from the work to roll back)");
            }
            try {
                return method.invoke(fenced, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }
}
