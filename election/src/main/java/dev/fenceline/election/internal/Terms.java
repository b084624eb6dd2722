package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionAdmin;

/** Term arithmetic (pure; unit-tested). Checked: a term never wraps around, whatever etcd holds. */
final class Terms {
    private Terms() {}

    /**
     * The term a campaign asks for: one above the last issued term, at least the floor and at least 1.
     *
     * @throws IllegalArgumentException naming the key, the limit and the value when the result would exceed
     *                                  {@link ElectionAdmin#MAX_TERM}
     */
    static long next(long lastIssued, long floor) {
        if (lastIssued >= ElectionAdmin.MAX_TERM) {
            throw new IllegalArgumentException("term must stay at most " + ElectionAdmin.MAX_TERM
                    + " but the last issued term is " + lastIssued + ": no further term can be issued");
        }
        if (floor > ElectionAdmin.MAX_TERM) {
            throw new IllegalArgumentException(
                    "term-floor must be at most " + ElectionAdmin.MAX_TERM + " but was " + floor);
        }
        return Math.max(Math.addExact(lastIssued, 1), Math.max(floor, 1));
    }

    /** Validates an operator's floor before it is written. */
    static void checkFloor(String election, long floor) {
        if (floor < 1 || floor > ElectionAdmin.MAX_TERM) {
            throw new dev.fenceline.election.ElectionException("ensureTermAtLeast(" + election
                    + "): term must be between" + " 1 and " + ElectionAdmin.MAX_TERM + " (MAX_TERM) but was " + floor);
        }
    }
}
