package dev.fenceline.election;

import org.jspecify.annotations.Nullable;

/** Configuration errors, lifecycle misuse, and etcd failures surfaced to callers (unchecked). */
public class ElectionException extends RuntimeException {
    private final boolean transientFailure;

    public ElectionException(String message) {
        this(message, null, false);
    }

    public ElectionException(String message, @Nullable Throwable cause) {
        this(message, cause, false);
    }

    /** @param transientFailure see {@link #isTransient()} */
    public ElectionException(String message, @Nullable Throwable cause, boolean transientFailure) {
        super(message, cause);
        this.transientFailure = transientFailure;
    }

    /**
     * True when waiting may fix this failure: etcd could not be reached or could not answer for now (connection
     * refused, no leader, UNAVAILABLE, a deadline exceeded). {@link ElectionSession#open} and
     * {@link ElectionAdmin#connect} say so for each failure to reach etcd; it is false there when retrying with the same configuration cannot help (an endpoint that is not
     * etcd, a TLS failure, etcd refusing the credentials or the permissions, invalid configuration), and the message
     * then says what to check. Every other failure (misuse, and etcd failures of other calls, which are not
     * classified) is false too: false means "not known to be transient", so a caller retries only on true.
     */
    public boolean isTransient() {
        return transientFailure;
    }
}
