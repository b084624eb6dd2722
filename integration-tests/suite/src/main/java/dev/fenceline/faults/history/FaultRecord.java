package dev.fenceline.faults.history;

/**
 * One injected fault: kind, target description, the worker it hit ({@code w1}; null when it hit no worker, e.g. the
 * whole etcd cluster, one member, the pooler or the rogue writer), when it was injected and healed (CLOCK_MONOTONIC
 * ns of the runner), and the highest term the database had accepted when it was injected.
 */
public record FaultRecord(int index, String kind, String target, String worker, long injectMonoNs, long healMonoNs,
                          long markAtInjection, String note) {
}
