package dev.fenceline.fencing;

import org.jspecify.annotations.Nullable;

/**
 * PostgreSQL rejected the transaction because a higher term was accepted for the resource: the caller is no longer
 * the leader. Nothing of the transaction persisted, and one row was committed to {@code fencing.rejected_write}
 * (unless {@link #audited()} is false, in which case the server log has a WARNING with the same fields).
 */
public final class StaleTermException extends FencingException {
    private static final long serialVersionUID = 1L;

    private final String resource;
    private final long offeredTerm;
    private final long highestAccepted;
    private final @Nullable String table;
    private final boolean audited;

    public StaleTermException(
            String resource,
            long offeredTerm,
            long highestAccepted,
            @Nullable String table,
            boolean audited,
            @Nullable Throwable cause) {
        super(
                "stale term " + offeredTerm + " for resource " + resource + " rejected"
                        + (table == null ? "" : " on " + table) + ": highest accepted term is " + highestAccepted
                        + (audited ? "" : " (audit row could not be written)"),
                cause);
        this.resource = resource;
        this.offeredTerm = offeredTerm;
        this.highestAccepted = highestAccepted;
        this.table = table;
        this.audited = audited;
    }

    public String resource() {
        return resource;
    }

    public long offeredTerm() {
        return offeredTerm;
    }

    public long highestAccepted() {
        return highestAccepted;
    }

    /** The table named by the {@link WriteDescription} or the trigger, or null. */
    public @Nullable String table() {
        return table;
    }

    public boolean audited() {
        return audited;
    }
}
