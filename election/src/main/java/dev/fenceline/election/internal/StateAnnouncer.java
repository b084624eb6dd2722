package dev.fenceline.election.internal;

import static dev.fenceline.election.LeadershipState.CLOSED;
import static dev.fenceline.election.LeadershipState.LATENT;
import static dev.fenceline.election.LeadershipState.LEADER;
import static dev.fenceline.election.LeadershipState.LOST;
import static dev.fenceline.election.LeadershipState.SUSPECT;

import dev.fenceline.election.ElectionEvent;
import dev.fenceline.election.ElectionException;
import dev.fenceline.election.ElectionListener;
import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * Holds an election's current state and announces each change: one log line, one event to every listener (each
 * on its own serial executor, in order) and a wake-up for {@link #awaitLeadership} callers.
 *
 * <p>{@link #transition} is called only from the election's serial executor; {@link #state()} and the listener
 * list may be read from any thread.
 */
final class StateAnnouncer {
    // the election's logger: these lines are the election's state changes
    private static final Logger log = LoggerFactory.getLogger(DefaultLeaderElection.class);

    private final String electionName;
    private final String candidateId;
    private final LeaseKeeper keeper;
    private final List<ListenerEntry> listeners = new CopyOnWriteArrayList<>();
    /** Notified after every state change; awaitLeadership waits on it. */
    private final Object monitor = new Object();

    private volatile LeadershipState state = LATENT;

    StateAnnouncer(String electionName, String candidateId, LeaseKeeper keeper) {
        this.electionName = electionName;
        this.candidateId = candidateId;
        this.keeper = keeper;
    }

    LeadershipState state() {
        return state;
    }

    void addListener(ElectionListener listener, Executor executor) {
        listeners.add(new ListenerEntry(listener, new SerialExecutor(executor)));
    }

    void removeListener(ElectionListener listener) {
        listeners.removeIf(e -> e.listener == listener);
    }

    /**
     * Blocks until {@code held} is a valid LEADER term, the election closes, or {@code timeout} passes. The check
     * and the wait happen under the monitor every transition notifies, so no change is missed.
     */
    Leadership awaitLeadership(Duration timeout, Supplier<LeadershipImpl> held)
            throws InterruptedException, TimeoutException {
        long deadline = now() + timeout.toNanos();
        synchronized (monitor) {
            while (true) {
                LeadershipImpl l = held.get();
                if (state == LEADER && l != null && l.isValidNow()) {
                    return l;
                }
                if (state == CLOSED) {
                    throw new ElectionException("election '" + electionName + "' is closed: no leadership to await");
                }
                long left = deadline - now();
                if (left <= 0) {
                    throw new TimeoutException("candidate '" + candidateId + "' did not become leader of election '"
                            + electionName + "' within " + timeout.toMillis() + "ms (state " + state + ")");
                }
                TimeUnit.NANOSECONDS.timedWait(monitor, Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
            }
        }
    }

    /**
     * Moves to {@code to} (a no-op if already there) and announces it. Only transitions {@link Transitions}
     * allows; {@code l} is the term the change concerns, or null.
     */
    void transition(LeadershipState to, String reason, @Nullable LeadershipImpl l) {
        LeadershipState from = state;
        if (from == to) {
            return;
        }
        Transitions.check(from, to);
        state = to;
        long nanos = now();
        Instant wall = Instant.now();
        long term = l != null ? l.term() : 0;
        long lease = l != null ? l.leaseId() : keeper.view().leaseId();
        // Changes that touch leadership at INFO, the rest (following, campaigning) at DEBUG.
        boolean aboutLeadership = to == LEADER || to == SUSPECT || to == LOST || from == LEADER || from == SUSPECT;
        log.atLevel(aboutLeadership ? Level.INFO : Level.DEBUG)
                .log(
                        "election state change: election={} candidate={} from={} to={} term={} lease={} reason=\"{}\"",
                        electionName,
                        candidateId,
                        from,
                        to,
                        term,
                        lease,
                        reason);
        // Reported on the System.nanoTime() scale, which listeners and history files compare with.
        ElectionEvent event = new ElectionEvent(
                electionName,
                candidateId,
                from,
                to,
                term,
                lease,
                reason,
                keeper.clock().toSystemNanos(nanos),
                wall,
                keeper.clock().toSystemNanos(keeper.view().validUntilNanos()),
                l);
        for (ListenerEntry e : listeners) {
            e.deliver(event);
        }
        synchronized (monitor) {
            monitor.notifyAll();
        }
    }

    /** The deadline clock (counts host suspend); the scale of event times and validity deadlines. */
    private long now() {
        return keeper.clock().nanoTime();
    }

    private static final class ListenerEntry {
        final ElectionListener listener;
        final SerialExecutor executor;

        ListenerEntry(ElectionListener listener, SerialExecutor executor) {
            this.listener = listener;
            this.executor = executor;
        }

        void deliver(ElectionEvent event) {
            executor.execute(() -> CallbackContext.run(() -> {
                try {
                    listener.onStateChange(event);
                } catch (RuntimeException e) {
                    log.warn(
                            "election listener threw; ignored: election={} listener={}",
                            event.electionName(),
                            listener,
                            e);
                }
            }));
        }
    }
}
