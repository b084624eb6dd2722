package dev.fenceline.election.internal;

import org.jspecify.annotations.Nullable;

/**
 * The JVM shutdown hook that closes a session ({@code closeOnShutdown}): registered when the session has opened,
 * removed when the session closes or crashes first, so a closed session is not kept reachable until exit.
 */
final class SessionShutdownHook {
    /** Null until {@link #register}. */
    private volatile @Nullable Thread hook;

    /** Registers {@code close} to run on a thread of its own when the JVM shuts down. */
    void register(Runnable close) {
        Thread t = new Thread(close, "fenceline-election-shutdown");
        Runtime.getRuntime().addShutdownHook(t);
        hook = t;
    }

    /** Removes the hook if one was registered; a no-op while the JVM is already shutting down (maybe in the hook). */
    void remove() {
        Thread t = hook;
        if (t == null) {
            return;
        }
        try {
            Runtime.getRuntime().removeShutdownHook(t);
        } catch (IllegalStateException alreadyShuttingDown) {
            // the JVM is shutting down (possibly this is the hook itself): it goes anyway
        }
    }
}
