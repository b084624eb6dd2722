package dev.fenceline.fencing;

import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Runs business transactions under a {@link FencingToken}; PostgreSQL accepts or rejects them as a whole.
 *
 * <pre>{@code
 * FencedWriter writer = FencedWriter.create(dataSource, FencedWriterConfig.defaults());
 * writer.transaction(FencingToken.of("settlement", leadership.term(), "worker-1"),
 *         WriteDescription.of("public.payment", "INSERT", batchKey, payloadJson),
 *         ctx -> ctx.insertInto(PAYMENT).set(PAYMENT.ID, id).set(PAYMENT.AMOUNT, amount).execute());
 * }</pre>
 *
 * <p>Outcomes: the work's result (committed); {@link StaleTermException} (a higher term was accepted: nothing
 * persisted, one audit row committed); {@link UnknownResourceException}, {@link TableNotProtectedException},
 * {@link IllegalArgumentException} (bad input: nothing written); {@link NotFencedException} (the work wrote a table of
 * another resource); {@link FenceUnavailableException} (fence could not be established: not committed);
 * {@link CommitOutcomeUnknownException} (connection lost during COMMIT); otherwise whatever the work threw (rolled
 * back; checked exceptions wrapped in {@link FencedWorkException}).
 *
 * <p>Every transaction starts with one statement of the writer's own (in the same round trip as the transaction's
 * BEGIN) that sets, for that transaction only, its isolation (READ COMMITTED), access mode (READ WRITE), the timeouts of
 * {@link FencedWriterConfig} and the token's term, resource and leader id, and reads the mark: a term already below it
 * is rejected before the work runs. PostgreSQL enters the transaction at the term at its first write to a protected
 * table (advancing the mark when the term is newer). Nothing is entered beyond the transaction and nothing is left on
 * the server session, so any pool works: direct, or through a session- or transaction-mode pooler.
 *
 * <p>Thread-safe; one writer per {@link DataSource} is enough. The writer does not own the data source.
 */
public final class FencedWriter {
    private final WriterEngine engine;

    private FencedWriter(WriterEngine engine) {
        this.engine = engine;
    }

    /** @throws NullPointerException when an argument is null */
    public static FencedWriter create(DataSource dataSource, FencedWriterConfig config) {
        return new FencedWriter(new WriterEngine(dataSource, config));
    }

    /** Runs {@code work} in one fenced transaction and returns its result once committed. */
    public <T extends @Nullable Object> T transaction(FencingToken token, FencedWork<T> work) {
        return engine.transaction(token, null, work);
    }

    /**
     * As {@link #transaction(FencingToken, FencedWork)}; {@code description} is validated up front (its table must be
     * protected for the token's resource, its payload within {@link FencedWriterConfig#maxPayloadBytes()}) and is
     * what the audit row records if the transaction is rejected.
     */
    public <T extends @Nullable Object> T transaction(
            FencingToken token, WriteDescription description, FencedWork<T> work) {
        if (description == null) {
            throw new NullPointerException("description");
        }
        return engine.transaction(token, description, work);
    }

    /**
     * As {@link #transaction(FencingToken, FencedWork)}, for work that returns nothing: returns once committed, with
     * the same outcomes (a rejected or failed transaction throws and persists nothing).
     */
    public void run(FencingToken token, FencedAction action) {
        engine.transaction(token, null, FencedWriter.asWork(action));
    }

    /** As {@link #transaction(FencingToken, WriteDescription, FencedWork)}, for work that returns nothing. */
    public void run(FencingToken token, WriteDescription description, FencedAction action) {
        transaction(token, description, FencedWriter.asWork(action));
    }

    // Safe: the work's result is Void, whose only value is null, and run() discards it. Declared FencedWork<@Nullable
    // Void>, but NullAway outside its JSpecify mode (not used here: it wants a newer javac than Java 17's) does not
    // read a type argument's annotation, so it takes the lambda's "return null" for a null where none may be.
    @SuppressWarnings("NullAway")
    private static FencedWork<@Nullable Void> asWork(FencedAction action) {
        if (action == null) {
            throw new NullPointerException("action");
        }
        return ctx -> {
            action.run(ctx);
            return null;
        };
    }

    /**
     * Enters the token's term in a transaction of its own, committed, without writing anything: advances the mark when
     * the term is newer (terminating the transactions of older terms that hold the fence lock, so a deposed leader is
     * fenced at once rather than at this leader's first write), or throws {@link StaleTermException} (audited) when a
     * higher term was already accepted. Nothing of it stays entered: every transaction of the writer is entered on its
     * own.
     */
    public void enter(FencingToken token) {
        engine.enter(token);
    }

    /** Creates the resource's high-water mark (at 0) if missing; returns its advisory lock key. Idempotent. */
    public long registerResource(String resource) {
        return engine.registerResource(resource);
    }

    /** The highest term accepted for the resource (a snapshot: it may advance right after). */
    public long highestAccepted(String resource) {
        return engine.highestAccepted(resource);
    }

    /**
     * Warm start: pays the one-time costs of the first fenced commit now, before this process can win a term — the
     * pool's connections, the driver's and jOOQ's classes, the writer's prepared statements and the fence functions'
     * plans on a pooled session, including a whole advance (of a resource registered for the warm-up alone, inside a
     * savepoint) — in a transaction that is rolled back. Writes nothing, advances no mark, enters no term beyond that
     * transaction and leaves nothing on the server session. Returns how long it took.
     *
     * @throws FenceUnavailableException when the database cannot be reached (nothing happened)
     */
    public java.time.Duration warmUp(String resource) {
        return engine.warmUp(resource);
    }

    public FencedWriterConfig config() {
        return engine.config();
    }
}
