package dev.fenceline.fencing;

import java.sql.Connection;
import org.jooq.ConnectionProvider;
import org.jooq.exception.DataAccessException;
import org.jspecify.annotations.Nullable;

/**
 * Hands jOOQ the connection of the fenced transaction running on the current thread. Lets one {@code DSLContext}
 * per writer serve every transaction (building a jOOQ configuration per transaction costs measurable CPU on the
 * hot path).
 */
final class CurrentConnectionProvider implements ConnectionProvider {
    private final ThreadLocal<Connection> current = new ThreadLocal<>();

    /** Binds {@code c} to this thread; returns the previous binding (nested transactions) for {@link #restore}. */
    @Nullable
    Connection bind(Connection c) {
        Connection previous = current.get();
        current.set(c);
        return previous;
    }

    void restore(@Nullable Connection previous) {
        if (previous == null) {
            current.remove();
        } else {
            current.set(previous);
        }
    }

    /** The connection bound to this thread (null: none). */
    @Nullable
    Connection current() {
        return current.get();
    }

    @Override
    public Connection acquire() {
        Connection c = current.get();
        if (c == null) {
            throw new DataAccessException("FencedContext.dsl() used outside its fenced transaction or on another"
                    + " thread: it is bound to the thread running the work of FencedWriter.transaction/run");
        }
        return c;
    }

    @Override
    public void release(Connection connection) {
        // the writer owns the connection's life cycle
    }
}
