package dev.fenceline.fencing;

/**
 * How long the writer's entering at a term lasts on a PostgreSQL server session.
 *
 * <p>Fence state lives in the <em>server</em> session. A transaction-mode pooler (PgBouncer {@code pool_mode =
 * transaction}, most managed poolers) hands one server session to many clients between their transactions, so
 * anything entered for a whole session would be used by whichever client's transaction runs on it next.
 */
public enum EnterScope {
    /**
     * Enter each physical connection once per term ({@code fencing.enter()}); a transaction then costs nothing but
     * the work and its commit. For direct connections and session-mode poolers. The default.
     */
    SESSION,
    /**
     * Enter every transaction on its own ({@code fencing.enter_transaction()}, one extra statement at its start,
     * which also sets the writer's lock and idle timeouts for that transaction, since poolers drop the
     * {@code options} startup parameter). Nothing is left on the server session. Required behind a
     * transaction-mode pooler.
     */
    TRANSACTION
}
