package dev.fenceline.fencing;

import org.jspecify.annotations.Nullable;

/** Base of every failure of the fence itself (as opposed to failures of the business work). */
public abstract class FencingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    protected FencingException(@Nullable String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
