package dev.fenceline.faults.history;

/**
 * One injected fault: kind, target description, when it was injected and healed (CLOCK_MONOTONIC ns of the
 * runner), and the highest term the database had accepted when it was injected.
 */
public record FaultRecord(int index, String kind, String target, long injectMonoNs, long healMonoNs,
                          long markAtInjection, String note) {
}
