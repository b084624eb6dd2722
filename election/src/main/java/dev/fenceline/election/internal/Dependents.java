package dev.fenceline.election.internal;

import java.util.Deque;
import java.util.concurrent.ConcurrentLinkedDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds what must close before the session's elections ({@code ElectionSession.closeFirst}) and closes it, newest
 * first, while the lease and the elections still hold: each dependent may still finish work under its term.
 */
final class Dependents {
    /** The session's category: operators filter the session's log lines by it. */
    private static final Logger log = LoggerFactory.getLogger(DefaultElectionSession.class);

    /** Newest first. */
    private final Deque<AutoCloseable> stack = new ConcurrentLinkedDeque<>();

    /** Adds {@code dependent}; the returned action removes it again (then closing the session leaves it open). */
    Runnable add(AutoCloseable dependent) {
        stack.push(dependent);
        return () -> stack.removeFirstOccurrence(dependent);
    }

    int size() {
        return stack.size();
    }

    /** Closes every dependent, newest first; one that fails to close is logged and does not stop the others. */
    void closeAll() {
        AutoCloseable d;
        while ((d = stack.poll()) != null) {
            try {
                d.close();
            } catch (Exception e) {
                log.warn("closing {} before the election session failed; closing the session anyway", d, e);
            }
        }
    }
}
