package dev.fenceline.faults.history;

/**
 * A worker's claim, recorded at {@code recordedMonoNs} (CLOCK_MONOTONIC ns), that its leadership of {@code term} has
 * been valid since {@code fromMonoNs} and stays valid until {@code untilMonoNs}. The checker counts the worker as
 * validly leader over {@code [max(from, recorded), until]}: what it could act on from the moment it said so. (A claim
 * about the past is not trusted: after a coordinator rebuild a term number is reused, and a "since" keyed by term
 * would reach back to the old leadership.)
 */
public record ValidityWindow(String worker, long term, long fromMonoNs, long untilMonoNs, long recordedMonoNs) {

    public ValidityWindow(String worker, long term, long fromMonoNs, long untilMonoNs) {
        this(worker, term, fromMonoNs, untilMonoNs, fromMonoNs);
    }

    public long effectiveFrom() {
        return Math.max(fromMonoNs, recordedMonoNs);
    }
}
