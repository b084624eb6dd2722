package dev.fenceline.election;

import dev.fenceline.election.internal.SessionFaults;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;

/** Test helper: one process-like candidate = its own session (lease) + one election + an event recorder. */
final class Candidate implements AutoCloseable {
    final String id;
    final ElectionSession session;
    final LeaderElection election;
    final ConcurrentLinkedQueue<ElectionEvent> events = new ConcurrentLinkedQueue<>();
    volatile boolean crashed;
    volatile long crashedAtNanos;

    Candidate(ElectionConfig config, String electionName, String id) {
        this.id = id;
        this.session = ElectionSession.open(config);
        this.election = session.election(electionName, id, Map.of("test", "true"));
        // direct executor: events are recorded on the election thread, in order, with no extra queueing
        this.election.addListener(events::add, Runnable::run);
    }

    static Candidate started(ElectionConfig config, String electionName, String id) {
        Candidate c = new Candidate(config, electionName, id);
        c.election.start();
        return c;
    }

    boolean isValidLeader() {
        Optional<Leadership> l = election.leadership();
        return l.isPresent() && l.get().isValidNow();
    }

    LeadershipState state() {
        return election.state();
    }

    long term() {
        return election.leadership().map(Leadership::term).orElse(0L);
    }

    /** Behave like a kill -9 of the process: no more renewals, deletes or transitions. */
    void crash() {
        crashedAtNanos = System.nanoTime();
        crashed = true;
        SessionFaults.crash(session);
    }

    List<ElectionEvent> eventsTo(LeadershipState s) {
        return events.stream().filter(e -> e.state() == s).toList();
    }

    @Override
    public void close() {
        if (!crashed) {
            session.close();
        }
    }
}
