package dev.fenceline.spring;

import dev.fenceline.election.LeaderElection;
import org.springframework.context.SmartLifecycle;

/**
 * Starts the auto-configured {@link LeaderElection} once every singleton exists (so nothing campaigns before the
 * migrations ran) and closes it when the context stops: its term stops being valid first, then the leader record is
 * deleted so another instance takes over at once instead of after the lease TTL.
 */
public class LeaderElectionLifecycle implements SmartLifecycle {
    /**
     * Below the default phase: starts before, and stops after, lifecycles of the default phase, so work that writes
     * under the term has stopped before the term is given up.
     */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 100;

    private final LeaderElection election;
    private volatile boolean running;

    public LeaderElectionLifecycle(LeaderElection election) {
        this.election = election;
    }

    @Override
    public void start() {
        election.start();
        running = true;
    }

    @Override
    public void stop() {
        running = false;
        election.close();
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }
}
