package dev.fenceline.fencing;

import org.jspecify.annotations.Nullable;

/**
 * The connection was lost while COMMIT was in flight, so the transaction may or may not have committed (if it did,
 * it committed before any higher term's transaction: the fence guarantees the order, not the outcome). Reconcile by
 * business key. {@link #deposed()} says whether a later check found the term already superseded.
 */
public final class CommitOutcomeUnknownException extends FencingException {
    private static final long serialVersionUID = 1L;
    private final FencingToken token;
    private final @Nullable Boolean deposed;
    private final @Nullable Long highestAccepted;

    public CommitOutcomeUnknownException(
            FencingToken token, @Nullable Boolean deposed, @Nullable Long highestAccepted, Throwable cause) {
        super(
                "commit outcome unknown for " + token + ": connection lost during COMMIT"
                        + (deposed == null
                                ? " (fence could not be re-checked)"
                                : deposed
                                        ? "; the term has since been superseded by " + highestAccepted
                                        : "; the term is still current"),
                cause);
        this.token = token;
        this.deposed = deposed;
        this.highestAccepted = highestAccepted;
    }

    public FencingToken token() {
        return token;
    }

    /** True/false after a successful re-check; null when the re-check itself failed. */
    public @Nullable Boolean deposed() {
        return deposed;
    }

    /** The mark seen by the re-check, or null. */
    public @Nullable Long highestAccepted() {
        return highestAccepted;
    }
}
