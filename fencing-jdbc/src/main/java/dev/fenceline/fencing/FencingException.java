package dev.fenceline.fencing;

/** Base of every failure of the fence itself (as opposed to failures of the business work). */
public abstract class FencingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    protected FencingException(String message, Throwable cause) {
        super(message, cause);
    }
}
