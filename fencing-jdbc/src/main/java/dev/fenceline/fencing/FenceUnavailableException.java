package dev.fenceline.fencing;

import org.jspecify.annotations.Nullable;

/**
 * The fence could not be established or checked: an advance of the mark could not take the fence lock from the
 * transactions of older terms within {@code advance_timeout} (SQLSTATE FL005; e.g. a prepared transaction holds it),
 * or the database was unreachable. The transaction did not
 * commit; retrying later is safe.
 */
public final class FenceUnavailableException extends FencingException {
    private static final long serialVersionUID = 1L;
    private final @Nullable String fix;

    public FenceUnavailableException(@Nullable String message, Throwable cause) {
        super(withFix(message, SqlStates.fixFor(cause)), cause);
        this.fix = SqlStates.fixFor(cause);
    }

    /** The fix on the same line as the failure: PostgreSQL's message may carry more lines (a position, a hint). */
    private static @Nullable String withFix(@Nullable String message, @Nullable String fix) {
        if (fix == null) {
            return message;
        }
        return (message == null ? "" : message.replaceAll("\\s*\\R\\s*", "; ") + " ") + "(not transient: " + fix + ")";
    }

    /**
     * False when waiting cannot fix the cause (the fencing schema missing, a login without the rights the fence needs,
     * a database that refuses the login): {@link #fix()} says what does. True for connections lost or refused for
     * now, timeouts and an advance that timed out.
     */
    public boolean isTransient() {
        return fix == null;
    }

    /** What fixes a failure that is not transient; null when it is. */
    public @Nullable String fix() {
        return fix;
    }
}
