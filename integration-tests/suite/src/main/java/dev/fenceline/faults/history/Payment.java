package dev.fenceline.faults.history;

/** A payment row after the run: status and the batch that settled it (null when pending). */
public record Payment(long id, String status, Long batchId, long amountCents) {

    public boolean settled() {
        return "SETTLED".equalsIgnoreCase(status);
    }
}
