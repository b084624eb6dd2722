package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionSession;

/**
 * Test-only seam (test sources, never shipped): fault hooks of a session that are not part of the API.
 * Tests and benchmarks in other packages call these; the hooks themselves stay package-private.
 */
public final class SessionFaults {
    private SessionFaults() {}

    /**
     * Behave like a process that froze or died at this instant: no more renewals, transitions, deletes or
     * revokes (see {@code DefaultElectionSession.simulateCrash}).
     */
    public static void crash(ElectionSession session) {
        ((DefaultElectionSession) session).simulateCrash();
    }
}
