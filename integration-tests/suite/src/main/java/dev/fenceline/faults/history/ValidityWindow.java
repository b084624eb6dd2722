package dev.fenceline.faults.history;

/**
 * The interval (CLOCK_MONOTONIC ns) during which a worker's election said its leadership of {@code term} was
 * valid. Several records for one (worker, term) are merged into one window by the checker.
 */
public record ValidityWindow(String worker, long term, long fromMonoNs, long untilMonoNs) {
}
