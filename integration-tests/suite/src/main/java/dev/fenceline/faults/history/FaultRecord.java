package dev.fenceline.faults.history;

/**
 * One injected fault: kind, target description, the worker it hit ({@code w1}; null when it hit no worker, e.g. the
 * whole etcd cluster, one member, the pooler or the rogue writer), when it was injected and healed (CLOCK_MONOTONIC
 * ns of the runner), and the highest term the database had accepted when it was injected.
 *
 * @param raftLeaderStopped for a fault that stopped one etcd member: whether that member was the Raft leader when it
 *                          was stopped; null for other faults, or when no member said which was leader
 */
public record FaultRecord(
        int index,
        String kind,
        String target,
        String worker,
        long injectMonoNs,
        long healMonoNs,
        long markAtInjection,
        String note,
        Boolean raftLeaderStopped) {
    /** A fault that stopped no etcd member. */
    public FaultRecord(
            int index,
            String kind,
            String target,
            String worker,
            long injectMonoNs,
            long healMonoNs,
            long markAtInjection,
            String note) {
        this(index, kind, target, worker, injectMonoNs, healMonoNs, markAtInjection, note, null);
    }
}
