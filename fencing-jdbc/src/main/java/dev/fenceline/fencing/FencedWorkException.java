package dev.fenceline.fencing;

/** Wraps a checked exception thrown by {@link FencedWork}; the transaction was rolled back. */
public final class FencedWorkException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public FencedWorkException(Throwable cause) {
        super("fenced work failed, transaction rolled back: " + cause, cause);
    }
}
