package dev.fenceline.election.internal;

import dev.fenceline.election.Leadership;
import dev.fenceline.election.LossReason;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;

/**
 * One held term. {@code valid} is set only by the election's serial executor: true on entering LEADER,
 * false <em>before</em> anything that ends or suspends the term is sent or announced. The validity check
 * additionally requires the lease keeper's published deadline to be in the future for this lease.
 */
final class LeadershipImpl implements Leadership {
    private final String electionName;
    private final String leaderId;
    private final long term;
    private final long leaseId;
    private final String nonce;
    private final Instant acquiredAt;
    /** mod revision of our leader record: resign deletes only if it is still this revision. */
    final long recordModRevision;

    private final LeaseKeeper keeper;
    /** Where {@link #lost} completes: the session's listener executor, never an election thread. */
    private final java.util.concurrent.Executor userExecutor;

    private final CompletableFuture<LossReason> lost = new CompletableFuture<>();
    private volatile boolean valid;
    private volatile boolean ended;
    private volatile long endedValidUntil;

    LeadershipImpl(
            String electionName,
            String leaderId,
            long term,
            long leaseId,
            String nonce,
            Instant acquiredAt,
            long recordModRevision,
            LeaseKeeper keeper,
            java.util.concurrent.Executor userExecutor) {
        this.userExecutor = userExecutor;
        this.electionName = electionName;
        this.leaderId = leaderId;
        this.term = term;
        this.leaseId = leaseId;
        this.nonce = nonce;
        this.acquiredAt = acquiredAt;
        this.recordModRevision = recordModRevision;
        this.keeper = keeper;
    }

    void validate() {
        valid = true;
    }

    void invalidate() {
        valid = false;
    }

    void end(LossReason reason) {
        valid = false;
        long now = keeper.clock().nanoTime();
        long d = deadlineNanos();
        endedValidUntil = ValidityDeadline.isBefore(now, d) ? now : d;
        ended = true;
        // on the listener executor: blocking work chained onto lost() must not stall every election of the session
        CallbackContext.deliver(userExecutor, () -> lost.complete(reason));
    }

    @Override
    public String electionName() {
        return electionName;
    }

    @Override
    public String leaderId() {
        return leaderId;
    }

    @Override
    public long term() {
        return term;
    }

    @Override
    public long leaseId() {
        return leaseId;
    }

    @Override
    public String nonce() {
        return nonce;
    }

    @Override
    public Instant acquiredAt() {
        return acquiredAt;
    }

    @Override
    public boolean isValidNow() {
        return valid && keeper.view().validNow(leaseId);
    }

    @Override
    public long validUntilNanos() {
        return keeper.clock().toSystemNanos(deadlineNanos());
    }

    /** The deadline on the election's own clock (what decisions use). */
    private long deadlineNanos() {
        if (ended) {
            return endedValidUntil;
        }
        LeaseKeeper.View v = keeper.view();
        return v.leaseId() == leaseId ? v.validUntilNanos() : keeper.clock().nanoTime();
    }

    @Override
    public CompletableFuture<LossReason> lost() {
        return lost;
    }

    @Override
    public String toString() {
        return "Leadership{election=" + electionName + ", leader=" + leaderId + ", term=" + term + ", lease=" + leaseId
                + ", valid=" + isValidNow() + "}";
    }
}
