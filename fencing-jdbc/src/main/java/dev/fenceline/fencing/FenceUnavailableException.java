package dev.fenceline.fencing;

/**
 * The fence could not be established or checked: an advance of the mark could not take the fence lock from the
 * transactions of older terms within {@code advance_timeout} (SQLSTATE FL005; e.g. a prepared transaction holds it),
 * or the database was unreachable. The transaction did not
 * commit; retrying later is safe.
 */
public final class FenceUnavailableException extends FencingException {
    private static final long serialVersionUID = 1L;

    public FenceUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
