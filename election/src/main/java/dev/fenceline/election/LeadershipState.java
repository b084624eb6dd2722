package dev.fenceline.election;

/**
 * What one {@link LeaderElection} believes about itself right now.
 *
 * <pre>
 *   LATENT --start()--> CANDIDATE <--> FOLLOWER
 *                          |              ^
 *                          | CAS won      | resign / kill switch / resign-request
 *                          v              |
 *                        LEADER ----------+
 *                          | deadline passed, renewal failed or timed out, stream broke
 *                          v
 *                        SUSPECT --linearizable read: record + lease still ours--> LEADER (same term)
 *                          |
 *                          +--record gone / lease gone--> LOST --> CANDIDATE (new campaign, new term)
 *   any --close()--> CLOSED
 * </pre>
 *
 * <p>Only {@link #LEADER} with {@link Leadership#isValidNow()} true permits new work. The state is a
 * hint for dashboards and listeners; the fenced write at the resource is what decides.
 */
public enum LeadershipState {
    /** Created, {@link LeaderElection#start()} not called yet. */
    LATENT,
    /** Trying to win: the leader key looked absent (or the last attempt failed) and a CAS is under way. */
    CANDIDATE,
    /** Another candidate holds the leader key, the election is paused, or this one just resigned. */
    FOLLOWER,
    /** This candidate holds the leader key and its local validity deadline has not passed. */
    LEADER,
    /** This candidate held the leader key but cannot currently prove it still does: stop new work. */
    SUSPECT,
    /** The term this candidate held is definitely over. Transient: a new campaign follows. */
    LOST,
    /** {@link LeaderElection#close()} was called (or the session closed). Terminal. */
    CLOSED
}
