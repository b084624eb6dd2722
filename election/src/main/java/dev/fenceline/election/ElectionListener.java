package dev.fenceline.election;

/**
 * Told about every state change of a {@link LeaderElection}.
 *
 * <p>Threading: each listener is called on the {@link java.util.concurrent.Executor} given to
 * {@link LeaderElection#addListener(ElectionListener, java.util.concurrent.Executor)} (default: one
 * session-wide listener thread), one event at a time and in the order the changes happened. Listeners never
 * run on the election's own threads, so a slow listener cannot delay renewals or the SUSPECT transition.
 *
 * <p>Listeners are hints that may race: by the time {@code LEADER} is delivered the term may already be
 * suspect. Check {@link Leadership#isValidNow()} before each unit of work; only the fenced write decides.
 * Exceptions thrown by a listener are logged and otherwise ignored.
 */
@FunctionalInterface
public interface ElectionListener {
    void onStateChange(ElectionEvent event);
}
