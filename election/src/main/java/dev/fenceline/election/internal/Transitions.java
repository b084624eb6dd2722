package dev.fenceline.election.internal;

import static dev.fenceline.election.LeadershipState.CANDIDATE;
import static dev.fenceline.election.LeadershipState.CLOSED;
import static dev.fenceline.election.LeadershipState.FOLLOWER;
import static dev.fenceline.election.LeadershipState.LATENT;
import static dev.fenceline.election.LeadershipState.LEADER;
import static dev.fenceline.election.LeadershipState.LOST;
import static dev.fenceline.election.LeadershipState.SUSPECT;

import dev.fenceline.election.LeadershipState;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

/**
 * The allowed state transitions (pure; unit-tested). The two that carry the safety argument:
 * <ul>
 *   <li>only CANDIDATE/FOLLOWER reach LEADER or SUSPECT (a won or re-discovered campaign), and</li>
 *   <li>SUSPECT reaches LEADER only through a verifying read ({@code verified=true} in the caller).</li>
 * </ul>
 * LEADER never goes straight to CANDIDATE: a term ends through LOST (taken away) or FOLLOWER (given up).
 */
public final class Transitions {
    private static final Map<LeadershipState, Set<LeadershipState>> ALLOWED = new EnumMap<>(LeadershipState.class);

    static {
        ALLOWED.put(LATENT, EnumSet.of(CANDIDATE, FOLLOWER, CLOSED));
        ALLOWED.put(CANDIDATE, EnumSet.of(FOLLOWER, LEADER, SUSPECT, CLOSED));
        ALLOWED.put(FOLLOWER, EnumSet.of(CANDIDATE, LEADER, SUSPECT, CLOSED));
        ALLOWED.put(LEADER, EnumSet.of(SUSPECT, LOST, FOLLOWER, CLOSED));
        ALLOWED.put(SUSPECT, EnumSet.of(LEADER, LOST, FOLLOWER, CLOSED));
        ALLOWED.put(LOST, EnumSet.of(CANDIDATE, FOLLOWER, CLOSED));
        ALLOWED.put(CLOSED, EnumSet.noneOf(LeadershipState.class));
    }

    private Transitions() {}

    public static boolean allowed(LeadershipState from, LeadershipState to) {
        Set<LeadershipState> next = ALLOWED.get(from); // every state has an entry
        return next != null && next.contains(to);
    }

    /**
     * Checks that {@code from -> to} is allowed.
     *
     * @throws IllegalStateException naming both states if the transition is not allowed
     */
    public static void check(LeadershipState from, LeadershipState to) {
        if (!allowed(from, to)) {
            throw new IllegalStateException("illegal election state transition " + from + " -> " + to);
        }
    }

    /** True for the states in which a term is held (work may be valid only in LEADER). */
    public static boolean holdsTerm(LeadershipState s) {
        return s == LEADER || s == SUSPECT;
    }
}
