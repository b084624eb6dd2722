package dev.fenceline.sample.settlement;

import dev.fenceline.fencing.FencedContext;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencingToken;
import dev.fenceline.fencing.StaleTermException;
import dev.fenceline.fencing.WriteDescription;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.Result;

/**
 * One settlement batch: plan, then settle in ONE fenced transaction.
 *
 * <ol>
 * <li>Plan (no transaction): the oldest {@code batchSize} PENDING payments not locked by anyone
 *     ({@code FOR UPDATE SKIP LOCKED}, released at once). The idempotency key is computed from their ids.</li>
 * <li>Settle ({@link FencedWriter#transaction} with {@code FencingToken.of(resource, term, workerId)}): lock
 *     exactly the planned rows that are still PENDING; if that is not the whole plan, give up (another writer
 *     got some: re-plan next tick). Mark them SETTLED with the batch id and term, then insert the batch row
 *     (the transaction's last statement: it takes {@code commit_seq} and {@code committed_at}).</li>
 * </ol>
 * PostgreSQL decides whether the term may write: a deposed leader's transaction is rejected as a whole,
 * audited in {@code fencing.rejected_write} with the batch key, and surfaces as {@link StaleTermException}.
 */
public final class SettlementJob {
    private final DataSource planningDataSource;
    private final FencedWriter writer;
    private final String resource;
    private final String workerId;
    private final int batchSize;

    /** Called inside the transaction after the updates, before the batch row (debug hook; may block). */
    public interface InsideBatchHook {
        void insideBatch(long term, String batchKey) throws InterruptedException;
    }

    public record Plan(List<Long> ids, long totalCents, String key) {
        public int size() {
            return ids.size();
        }
    }

    /** Thrown when the planned rows are no longer all PENDING and unlocked; nothing was written. */
    public static final class BatchChangedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BatchChangedException(String message) {
            super(message);
        }
    }

    public SettlementJob(
            DataSource planningDataSource, FencedWriter writer, String resource, String workerId, int batchSize) {
        this.planningDataSource = planningDataSource;
        this.writer = writer;
        this.resource = resource;
        this.workerId = workerId;
        this.batchSize = batchSize;
    }

    /** The next batch to settle, or null when nothing is PENDING (or everything pending is locked). */
    public Plan plan() throws SQLException {
        List<Long> ids = new ArrayList<>(batchSize);
        long cents = 0;
        try (Connection c = planningDataSource.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT id, amount_cents FROM settlement.payment WHERE status = 'PENDING' "
                                + "ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED")) {
            ps.setInt(1, batchSize);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                    cents += rs.getLong(2);
                }
            }
        }
        return ids.isEmpty() ? null : new Plan(List.copyOf(ids), cents, IdempotencyKey.of(ids));
    }

    /** Settles the plan under {@code term} in its own fenced transaction; returns the new batch id. */
    public long settle(Plan plan, long term, InsideBatchHook hook) {
        FencingToken token = FencingToken.of(resource, term, workerId);
        return writer.transaction(token, describe(plan), ctx -> settleIn(ctx, plan, hook));
    }

    /** What the audit row records if the plan's transaction is rejected: the batch row, keyed by the batch key. */
    public WriteDescription describe(Plan plan) {
        return WriteDescription.of(
                "settlement.settlement_batch",
                "INSERT",
                plan.key(),
                "{\"payments\":" + plan.size() + ",\"total_cents\":" + plan.totalCents() + ",\"first_payment_id\":"
                        + plan.ids().get(0) + ",\"last_payment_id\":"
                        + plan.ids().get(plan.size() - 1) + "}");
    }

    /** Settles the plan inside the caller's fenced transaction, under its term; returns the new batch id. */
    public long settleIn(FencedContext ctx, Plan plan, InsideBatchHook hook) throws Exception {
        return settleInTransaction(ctx, plan, ctx.term(), hook);
    }

    private long settleInTransaction(FencedContext ctx, Plan plan, long term, InsideBatchHook hook) throws Exception {
        DSLContext dsl = ctx.dsl();
        Long[] ids = plan.ids().toArray(new Long[0]);
        Result<Record> locked = dsl.fetch(
                "SELECT id FROM settlement.payment WHERE id = ANY(?) AND status = 'PENDING' "
                        + "ORDER BY id FOR UPDATE SKIP LOCKED",
                (Object) ids);
        if (locked.size() != ids.length) {
            throw new BatchChangedException("only " + locked.size() + " of the " + ids.length
                    + " planned payments are still PENDING and unlocked; re-planning");
        }
        long batchId = dsl.fetchSingle("SELECT nextval('settlement.settlement_batch_id_seq')")
                .get(0, Long.class);
        int updated = dsl.execute(
                "UPDATE settlement.payment SET status = 'SETTLED', settlement_batch_id = ?, fencing_term = ?, "
                        + "settled_at = now() WHERE id = ANY(?) AND status = 'PENDING'",
                batchId,
                term,
                (Object) ids);
        if (updated != ids.length) {
            throw new BatchChangedException("updated " + updated + " of " + ids.length + " payments; re-planning");
        }
        if (hook != null) {
            hook.insideBatch(term, plan.key());
        }
        dsl.execute(
                "INSERT INTO settlement.settlement_batch (id, idempotency_key, term, leader_id, payment_count, total_cents, "
                        + "fencing_term) VALUES (?, ?, ?, ?, ?, ?, ?)",
                batchId,
                plan.key(),
                term,
                workerId,
                ids.length,
                plan.totalCents(),
                term);
        return batchId;
    }
}
