package dev.fenceline.fencing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.jspecify.annotations.Nullable;

/**
 * The first fenced commit's one-time costs, paid inside a transaction the caller rolls back, after the writer's own
 * first statement. Nothing persists and nothing outside this transaction is affected: no mark moves, no term is
 * entered beyond the transaction (the fence lock it takes ends with the rollback), no audit row is written, no other
 * session is terminated (the advance it runs is of a resource of its own, see {@link #advancePath}), nothing is left on
 * the server session.
 */
final class WarmUp {
    /** Schema-qualified like most applications' tables, so jOOQ's schema mapping is loaded too. */
    private static final Table<Record> SCRATCH = DSL.table(DSL.name("pg_temp", "fencing_warm_up"));

    private static final Field<Long> ID = DSL.field(DSL.name("id"), SQLDataType.BIGINT);
    private static final Field<String> NOTE = DSL.field(DSL.name("note"), SQLDataType.VARCHAR);

    private WarmUp() {}

    /**
     * The new leader's first write advances the mark, and in a server session that never ran an advance a good part of
     * its time goes to compiling the functions and loading the catalogs they read (see docs/benchmarks.md, "first
     * commit after winning"). So the warm-up runs a whole advance — on a resource of its own, registered inside a
     * savepoint under a name nobody else uses, at its first term — and rolls the savepoint back: the row, its history
     * and the fence lock go with it; nothing of the real resource is touched and nobody is terminated (no transaction
     * holds the new resource's fence lock). Any failure only means less was warmed.
     */
    private static void advancePath(Connection c) throws SQLException {
        String scratch = "warm-up." + java.util.UUID.randomUUID().toString().replace("-", "");
        Savepoint savepoint = c.setSavepoint();
        try {
            try (PreparedStatement ps = c.prepareStatement("SELECT fencing.register_resource(?)")) {
                ps.setString(1, scratch);
                ps.executeQuery().close();
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT fencing.enter(?, 1, 'warm-up')")) {
                ps.setString(1, scratch);
                ps.executeQuery().close();
            }
        } catch (SQLException lessWarmed) {
            // e.g. a login that may not register resources: the first advance pays its compilation itself
        } finally {
            c.rollback(savepoint);
        }
    }

    /**
     * {@code fencing.enter} (this transaction only) without a leader id: neither a holder check nor an audit can come
     * of it.
     */
    private static void enter(Connection c, String resource, long term) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT fencing.enter(?, ?, NULL)")) {
            ps.setString(1, resource);
            ps.setLong(2, term);
            ps.executeQuery().close();
        }
    }

    /**
     * @param mark the resource's mark as the writer's first statement of this transaction read it; null when the
     *             resource is not registered (then only the writer's own statements are warmed)
     */
    static void run(
            Connection c,
            DSLContext workDsl,
            CurrentConnectionProvider current,
            FencingToken token,
            @Nullable Long mark)
            throws SQLException {
        if (mark != null) {
            // The entering's path (what the guard runs at a transaction's first write): entered at the CURRENT mark
            // without a leader id, which neither advances nor checks the holder (so it can be neither rejected nor
            // audited); the shared fence lock it takes ends with the rollback.
            if (mark > 0) {
                enter(c, token.resource(), mark);
            }
        }
        advancePath(c);
        // jOOQ's rendering, binding and execution of what fenced work typically does, on a temporary table that the
        // rollback removes (no trigger: it is not protected).
        try (Statement st = c.createStatement()) {
            st.execute("CREATE TEMPORARY TABLE fencing_warm_up (id bigint, note text, fencing_term bigint)"
                    + " ON COMMIT DROP");
            // the check the writer sends with its COMMIT (it passes: begin_write began this transaction)
            st.execute("SELECT fencing.check_writers_transaction()");
        }
        Connection previous = current.bind(c);
        try {
            FencedContextImpl ctx = new FencedContextImpl(workDsl, token, c);
            try {
                ctx.insertInto(SCRATCH).set(ID, 1L).set(NOTE, "warm-up").execute();
                ctx.update(SCRATCH).set(NOTE, "warm-up").where(ID.eq(1L)).execute();
                ctx.dsl()
                        .select(ID, NOTE)
                        .from(SCRATCH)
                        .where(ID.in(1L, 2L))
                        .orderBy(ID)
                        .limit(10)
                        .forUpdate()
                        .fetch();
                ctx.dsl().fetch("SELECT id FROM fencing_warm_up WHERE id = ANY(?)", (Object) new Long[] {1L});
                ctx.deleteFrom(SCRATCH).where(ID.eq(1L)).execute();
            } finally {
                ctx.end();
            }
        } finally {
            current.restore(previous);
        }
    }
}
