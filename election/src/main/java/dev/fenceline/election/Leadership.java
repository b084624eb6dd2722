package dev.fenceline.election;

import java.time.Instant;
import java.util.concurrent.CompletableFuture;

/**
 * One term held by one candidate. Immutable identity (term, lease, nonce) plus a validity deadline on
 * this JVM's monotonic clock that the lease keeper moves forward after every <em>confirmed</em> renewal.
 *
 * <p>Use it like this: before each unit of work, {@code if (!leadership.isValidNow()) stop;} and pass
 * {@link #term()} as the fencing token with the write. {@code isValidNow()} can be true for at most one
 * candidate of an election at a time as long as this process's clock rate and scheduling stay within the
 * configured safety margin; a process paused between the check and the write is caught by the fence, not
 * by this object.
 */
public interface Leadership {
    String electionName();

    /** The candidate id that holds this term (the {@code leader_id} of the record). */
    String leaderId();

    /** The term assigned by etcd's term counter; strictly increasing per election. */
    long term();

    /** The etcd lease the leader record is bound to. */
    long leaseId();

    /** Random per-campaign value stored in the record; proves a record is ours after an unknown outcome. */
    String nonce();

    /** Wall-clock time the campaign transaction was issued (informational only). */
    Instant acquiredAt();

    /**
     * True iff this term is still held in state {@link LeadershipState#LEADER} and the deadline clock is
     * before {@code validUntilNanos()}. Cheap (two volatile reads and a clock read), safe to call
     * before every write.
     */
    boolean isValidNow();

    /**
     * The local deadline on the {@link System#nanoTime()} scale: send time of the last confirmed lease renewal
     * + TTL − safety margin. The election decides on a clock that also counts host suspend (the wall clock ran ahead
     * of the monotonic clock); the suspend counted so far is subtracted here, so this is never later than the
     * deadline the election decides by. Moves forward with renewals; once the term ended it is frozen at the instant
     * validity ended (the earlier of that deadline and the end of the term).
     */
    long validUntilNanos();

    /**
     * Completes when this term is definitely over; never completes exceptionally. It completes on the
     * session's listener executor, never on an election thread, so blocking work chained onto it delays other
     * listeners but no election.
     */
    CompletableFuture<LossReason> lost();
}
