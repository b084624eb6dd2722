package dev.fenceline.faults.history;

import java.time.Instant;

/** A settlement_batch row: the database's own record of a committed batch. */
public record CommittedBatch(
        long id,
        String idempotencyKey,
        long term,
        String leaderId,
        int paymentCount,
        long totalCents,
        Instant committedAt) {

    public String describe() {
        return "batch{id=" + id + ", key=" + idempotencyKey + ", term=" + term + ", leader=" + leaderId + ", payments="
                + paymentCount + ", committed_at=" + committedAt + "}";
    }
}
