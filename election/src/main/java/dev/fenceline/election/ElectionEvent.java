package dev.fenceline.election;

import java.time.Instant;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * A state change of one {@link LeaderElection}, delivered to {@link ElectionListener}s.
 *
 * @param electionName election name
 * @param candidateId  this candidate's id
 * @param previous     state before the change
 * @param state        state after the change
 * @param term         the term concerned (held, suspected or lost); 0 when no term is involved
 * @param leaseId      the session lease at the time of the change
 * @param reason       short human-readable cause ("campaign won", "renewal timed out", ...)
 * @param nanoTime     {@link System#nanoTime()} when the state changed (before listeners were called)
 * @param wallTime     wall clock when the state changed
 * @param validUntilNanos the lease keeper's validity deadline ({@link System#nanoTime()} scale) at the change:
 *                     send time of the last confirmed renewal + TTL − safety margin; etcd cannot expire the
 *                     lease before {@code validUntilNanos + safetyMargin}
 * @param leadership   the leadership concerned, or null
 */
public record ElectionEvent(
        String electionName,
        String candidateId,
        LeadershipState previous,
        LeadershipState state,
        long term,
        long leaseId,
        String reason,
        long nanoTime,
        Instant wallTime,
        long validUntilNanos,
        @Nullable Leadership leadership) {

    public Optional<Leadership> leadershipIfAny() {
        return Optional.ofNullable(leadership);
    }
}
