package dev.fenceline.sample.verify;

import java.time.Instant;
import java.util.List;

/** Everything {@link Verifier} looks at, loaded from the database (and optionally history files). */
public record VerifyInput(
        String resource,
        long highestAccepted,
        PaymentSummary payments,
        List<Batch> batchesInCommitOrder,
        List<TermAccepted> termHistory,
        List<Rejection> rejections,
        List<AttemptOutcome> historyOutcomes) {

    public record PaymentSummary(
            long total, long pending, long settled, long settledWithoutBatch, long pendingWithBatch) {}

    /**
     * A committed batch with the aggregate of the payments that reference it: {@code referencingCount},
     * {@code referencingCents}, {@code contentKey} (the idempotency key recomputed from those payments)
     * and {@code termMismatches} (referencing payments whose fencing_term differs from the batch term).
     */
    public record Batch(
            long id,
            String idempotencyKey,
            long term,
            String leaderId,
            long paymentCount,
            long totalCents,
            long commitSeq,
            Instant committedAt,
            long referencingCount,
            long referencingCents,
            String contentKey,
            long termMismatches) {}

    public record TermAccepted(long term, String leaderId, Instant acceptedAt) {}

    public record Rejection(
            long id,
            long offeredTerm,
            long highestAccepted,
            String leaderId,
            String businessKey,
            String tableName,
            Instant rejectedAt) {}

    /** A batch attempt's end as reported by a worker's --history-file. */
    public record AttemptOutcome(String worker, long term, String batchKey, String outcome) {}
}
