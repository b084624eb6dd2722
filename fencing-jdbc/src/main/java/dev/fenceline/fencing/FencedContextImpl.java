package dev.fenceline.fencing;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Array;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Wrapper;
import java.util.List;
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
import org.jspecify.annotations.Nullable;

/** One per fenced transaction; {@link #end()} once the work has returned or thrown. */
final class FencedContextImpl implements FencedContext {
    static final Field<Long> FENCING_TERM = DSL.field(DSL.name("fencing_term"), SQLDataType.BIGINT);

    /** Calls that would end or reshape the writer's transaction behind its back. */
    private static final Set<String> WRITERS_CALLS =
            Set.of("commit", "rollback", "setAutoCommit", "setTransactionIsolation", "close", "abort");

    /** Types that lead back to their connection, most specific first (for results declared as Object). */
    private static final List<Class<?>> LEAD_BACK = List.of(
            CallableStatement.class,
            PreparedStatement.class,
            Statement.class,
            ResultSet.class,
            Array.class,
            DatabaseMetaData.class);

    private final DSLContext dsl;
    private final FencingToken token;
    private final Connection fenced;
    private final Thread owner = Thread.currentThread();
    /** Written and read by the owner thread only (other threads are refused before they read it). */
    private boolean ended;

    private @Nullable Connection view;

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
        checkBound();
        return dsl;
    }

    /**
     * The jOOQ context is shared: its statements run on whatever fenced connection the thread has bound. Inside a
     * nested fenced transaction that is the inner one, so an outer context's statements would run in, and commit
     * with, the inner transaction, whatever becomes of the outer one. Refused instead.
     */
    private void checkBound() {
        if (dsl.configuration().connectionProvider() instanceof CurrentConnectionProvider p) {
            Connection bound = p.current();
            if (bound != null && bound != fenced) {
                throw new IllegalStateException("FencedContext of " + token + " used inside another fenced transaction"
                        + " on this thread (a nested FencedWriter.transaction/run): its statements would run in, and"
                        + " commit with, that transaction; use the inner work's FencedContext there");
            }
        }
    }

    @Override
    public Connection connection() {
        if (view == null) { // created on first use only: the jOOQ-only hot path allocates no proxy
            view = (Connection) Proxy.newProxyInstance(
                    Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, new Guarded(fenced, true));
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
        checkBound();
        return dsl.update(table).set(FENCING_TERM, token.term());
    }

    @Override
    public <R extends Record> InsertSetMoreStep<R> insertInto(Table<R> table) {
        checkBound();
        return dsl.insertInto(table).set(FENCING_TERM, token.term());
    }

    @Override
    public <R extends Record> DeleteUsingStep<R> deleteFrom(Table<R> table) {
        checkBound();
        return dsl.deleteFrom(table);
    }

    /**
     * The fenced connection minus the calls that belong to the writer, usable only by the work while it runs; and,
     * with the same rules, every JDBC object reached from it. Statements, result sets, metadata, arrays and LOBs lead
     * back to their connection ({@code getConnection()}, {@code getStatement()}, {@code unwrap}): handed out bare,
     * they would lead to the pool's connection, whose {@code commit()} is not refused. So they are handed out wrapped,
     * their way back leads to this view, and {@code unwrap} gives interfaces only, wrapped too.
     *
     * <p>SQL text is sent as it is. SQL that ends the transaction (COMMIT, ROLLBACK, PREPARE TRANSACTION, with or
     * without AND CHAIN) ends the writer's settings with it: whatever the work writes to a protected table after it
     * has no term and is rejected (FL002), and the writer's check before its COMMIT finds the transaction ended or
     * replaced and commits nothing more ({@code fencing.check_writers_transaction}).
     */
    private final class Guarded implements InvocationHandler {
        private final Object target;
        private final boolean connection;

        Guarded(Object target, boolean connection) {
            this.target = target;
            this.connection = connection;
        }

        @Override
        public @Nullable Object invoke(Object proxy, Method method, Object @Nullable [] args) throws Throwable {
            String name = method.getName();
            if (method.getDeclaringClass() == Object.class) {
                return switch (name) {
                    case "equals" -> args != null && proxy == args[0]; // equals(Object): always one argument
                    case "hashCode" -> System.identityHashCode(proxy);
                    default ->
                        connection
                                ? "FencedContext.connection() of " + token
                                : target.getClass().getSimpleName() + " of FencedContext.connection() of " + token;
                };
            }
            checkOwner();
            boolean rollbackToSavepoint = name.equals("rollback") && args != null && args.length == 1;
            if (connection && WRITERS_CALLS.contains(name) && !rollbackToSavepoint) {
                throw new SQLException("FencedContext.connection()." + name + "(...) is not allowed: the fenced writer"
                        + " commits, rolls back and returns the connection itself (throw from the work to roll back)");
            }
            if (connection && name.equals("getQueryExecutor")) {
                throw new SQLException(
                        "FencedContext.connection(): getQueryExecutor() is not allowed: the driver's query"
                                + " executor works on the pool's connection past this view, which is bound to the work's thread"
                                + " and ends with the work");
            }
            if (connection && name.equals("getCopyAPI") && target instanceof org.postgresql.core.BaseConnection base) {
                return new WorkBoundCopyApi(base);
            }
            if (name.equals("unwrap") && args != null && args.length == 1 && args[0] instanceof Class<?> iface) {
                return unwrap(proxy, iface);
            }
            if (name.equals("isWrapperFor") && args != null && args.length == 1 && args[0] instanceof Class<?> iface) {
                return iface.isInstance(proxy) || iface.isInterface() && ((Wrapper) target).isWrapperFor(iface);
            }
            Object result;
            try {
                result = method.invoke(target, bare(args));
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
            return handedOut(method.getReturnType(), result);
        }

        private Object unwrap(Object proxy, Class<?> iface) throws SQLException {
            if (iface.isInstance(proxy)) {
                return proxy;
            }
            if (!iface.isInterface()) {
                throw new SQLException("FencedContext.connection(): unwrap(" + iface.getName() + ") is not allowed,"
                        + " only interfaces (e.g. org.postgresql.PGConnection): the driver's classes lead to the"
                        + " pool's connection, whose commit and rollback belong to the fenced writer");
            }
            return wrap(iface, ((Wrapper) target).unwrap(iface));
        }
    }

    private void checkOwner() throws SQLException {
        if (Thread.currentThread() != owner || ended) {
            throw new SQLException("FencedContext.connection() used outside its fenced transaction or on another"
                    + " thread: it is bound to the thread running the work of FencedWriter.transaction/run");
        }
    }

    /**
     * COPY through {@code PGConnection.getCopyAPI()}: bound to the work's thread and lifetime like the connection view
     * (every copy method of the driver's CopyManager starts through these three).
     */
    private final class WorkBoundCopyApi extends org.postgresql.copy.CopyManager {
        WorkBoundCopyApi(org.postgresql.core.BaseConnection base) throws SQLException {
            super(base);
        }

        @Override
        public org.postgresql.copy.CopyIn copyIn(String sql) throws SQLException {
            checkOwner();
            return super.copyIn(sql);
        }

        @Override
        public org.postgresql.copy.CopyOut copyOut(String sql) throws SQLException {
            checkOwner();
            return super.copyOut(sql);
        }

        @Override
        public org.postgresql.copy.CopyDual copyDual(String sql) throws SQLException {
            checkOwner();
            return super.copyDual(sql);
        }
    }

    /** What a call returns to the work: its connection is the view; objects that lead back to it are wrapped. */
    private @Nullable Object handedOut(Class<?> declared, @Nullable Object result) {
        if (result == null) {
            return null;
        }
        if (result instanceof Connection) {
            return connection();
        }
        if (declared.isInterface() && declared.getPackageName().equals("java.sql")) {
            return wrap(declared, result); // Statement, ResultSet, DatabaseMetaData, Array, Blob, Savepoint, ...
        }
        for (Class<?> type : LEAD_BACK) { // declared as Object: getObject() of an array or a refcursor
            if (type.isInstance(result)) {
                return wrap(type, result);
            }
        }
        return result;
    }

    private Object wrap(Class<?> iface, Object target) {
        if (target instanceof Connection) {
            // e.g. PGConnection: only that interface's methods, refused like the view's
            return iface == Connection.class
                    ? connection()
                    : Proxy.newProxyInstance(iface.getClassLoader(), new Class<?>[] {iface}, new Guarded(target, true));
        }
        return Proxy.newProxyInstance(iface.getClassLoader(), new Class<?>[] {iface}, new Guarded(target, false));
    }

    /** Arguments handed back to the driver (e.g. a Savepoint, an Array) are the driver's own objects again. */
    private static Object @Nullable [] bare(Object @Nullable [] args) {
        if (args == null) {
            return null;
        }
        Object[] out = args;
        for (int i = 0; i < args.length; i++) {
            Object a = args[i];
            if (a != null && Proxy.isProxyClass(a.getClass()) && Proxy.getInvocationHandler(a) instanceof Guarded g) {
                if (out == args) {
                    out = args.clone();
                }
                out[i] = g.target;
            }
        }
        return out;
    }
}
