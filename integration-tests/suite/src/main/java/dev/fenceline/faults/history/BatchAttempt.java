package dev.fenceline.faults.history;

/**
 * One batch attempt as recorded by a worker's history file. Times are CLOCK_MONOTONIC nanoseconds
 * (System.nanoTime of the worker; system-wide on Linux, so comparable across processes of one host).
 * {@code endMonoNs} is -1 when the attempt has no end record.
 */
public record BatchAttempt(
        String worker,
        long term,
        String batchKey,
        long startMonoNs,
        long endMonoNs,
        Outcome outcome,
        int payments,
        String error) {

    public boolean ended() {
        return endMonoNs >= 0;
    }

    public String describe() {
        return "attempt{worker=" + worker + ", term=" + term + ", batch_key=" + batchKey + ", outcome=" + outcome
                + (error == null || error.isBlank() ? "" : ", error=" + error) + "}";
    }
}
