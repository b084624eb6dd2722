package dev.fenceline.fencing;

/**
 * The fencing trigger rejected a write because the transaction carried no term for the table's resource (SQLSTATE
 * FL002): e.g. the work wrote a table protected for another resource than the token's, or wrote after ending the
 * writer's transaction itself (the term ends with the transaction). Rolled back; audited by the
 * trigger when dblink is available.
 */
public final class NotFencedException extends FencingException {
    private static final long serialVersionUID = 1L;
    private final String resource;
    private final String table;

    public NotFencedException(String resource, String table, String message, Throwable cause) {
        super(message, cause);
        this.resource = resource;
        this.table = table;
    }

    /** The resource of the protected table that was written. */
    public String resource() {
        return resource;
    }

    public String table() {
        return table;
    }
}
