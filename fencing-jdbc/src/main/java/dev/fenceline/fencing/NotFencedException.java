package dev.fenceline.fencing;

import org.jspecify.annotations.Nullable;

/**
 * The fencing trigger rejected a write because the transaction carried no term for the table's resource (SQLSTATE
 * FL002): e.g. the work wrote a table protected for another resource than the token's, or wrote after ending the
 * writer's transaction itself (the term ends with the transaction). Rolled back; audited by the
 * trigger when dblink is available.
 */
public final class NotFencedException extends FencingException {
    private static final long serialVersionUID = 1L;
    private final @Nullable String resource;
    private final @Nullable String table;

    public NotFencedException(
            @Nullable String resource, @Nullable String table, @Nullable String message, Throwable cause) {
        super(message, cause);
        this.resource = resource;
        this.table = table;
    }

    /** The resource of the protected table that was written; null when PostgreSQL did not say. */
    public @Nullable String resource() {
        return resource;
    }

    /** The protected table that was written; null when PostgreSQL did not say. */
    public @Nullable String table() {
        return table;
    }
}
