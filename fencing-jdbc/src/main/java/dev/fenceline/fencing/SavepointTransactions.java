package dev.fenceline.fencing;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import org.jooq.Transaction;
import org.jooq.TransactionContext;
import org.jooq.TransactionProvider;
import org.jooq.exception.DataAccessException;

/**
 * jOOQ's transaction API on {@code FencedContext.dsl()} ({@code dsl().transaction(...)}): inside fenced work a
 * transaction is a savepoint of the writer's transaction, which commits or rolls back as a whole with it. jOOQ's
 * default provider would commit the connection itself, and with it the work's earlier writes on their own.
 */
final class SavepointTransactions implements TransactionProvider {
    private record Nested(Connection connection, Savepoint savepoint) implements Transaction {}

    @Override
    public void begin(TransactionContext ctx) {
        Connection c = ctx.configuration().connectionProvider().acquire();
        try {
            ctx.transaction(new Nested(c, c.setSavepoint()));
        } catch (SQLException e) {
            throw new DataAccessException("could not set the savepoint of a transaction inside fenced work", e);
        }
    }

    @Override
    public void commit(TransactionContext ctx) {
        Nested n = (Nested) ctx.transaction();
        try {
            n.connection().releaseSavepoint(n.savepoint());
        } catch (SQLException e) {
            throw new DataAccessException("could not release the savepoint of a transaction inside fenced work", e);
        }
    }

    @Override
    public void rollback(TransactionContext ctx) {
        if (!(ctx.transaction() instanceof Nested n)) {
            return; // begin failed: nothing to roll back to
        }
        try {
            n.connection().rollback(n.savepoint());
        } catch (SQLException e) {
            throw new DataAccessException(
                    "could not roll back to the savepoint of a transaction inside fenced work", e);
        }
    }
}
