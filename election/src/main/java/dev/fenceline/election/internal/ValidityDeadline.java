package dev.fenceline.election.internal;

import java.time.Duration;

/**
 * Deadline arithmetic on the {@link System#nanoTime()} scale (pure; unit-tested).
 *
 * <p>Safety argument. Let {@code s} be the local send time of a renewal that etcd confirmed with a positive
 * TTL. etcd processed it at some instant after {@code s}, and from that instant the lease lives at least
 * {@code ttlEtcd} seconds of the etcd leader's clock (a new etcd leader only extends leases). Hence etcd
 * cannot expire the lease, and no successor can win, before {@code s + ttl} on our clock if both clocks run
 * at the same rate; {@code safetyMargin} absorbs rate differences and the latency of our deadline timer. We
 * use the smaller of the configured TTL and the TTL etcd reported, so a server that granted less than we
 * asked never makes us over-confident.
 */
public final class ValidityDeadline {
    private ValidityDeadline() {}

    /**
     * The local validity deadline that a confirmed renewal (or grant) sets.
     *
     * @param confirmedSendNanos nanoTime just before the confirmed renewal (or grant) was sent
     * @param etcdTtlSeconds     TTL etcd reported in the response (seconds, positive)
     * @param configuredTtl      the TTL we asked for
     * @param safetyMargin       subtracted margin
     * @return the deadline on the nanoTime scale
     */
    public static long deadlineNanos(
            long confirmedSendNanos, long etcdTtlSeconds, Duration configuredTtl, Duration safetyMargin) {
        if (etcdTtlSeconds <= 0) {
            throw new IllegalArgumentException("etcdTtlSeconds must be positive but was " + etcdTtlSeconds);
        }
        long ttlNanos = Math.min(Duration.ofSeconds(etcdTtlSeconds).toNanos(), configuredTtl.toNanos());
        return confirmedSendNanos + ttlNanos - safetyMargin.toNanos();
    }

    /** True iff {@code now} is strictly before {@code deadline}; overflow-safe like all nanoTime comparisons. */
    public static boolean isBefore(long nowNanos, long deadlineNanos) {
        return nowNanos - deadlineNanos < 0;
    }

    /** The later of two deadlines (overflow-safe). A late response to an old renewal never moves it back. */
    public static long later(long a, long b) {
        return a - b >= 0 ? a : b;
    }

    /** Nanoseconds from {@code now} until {@code deadline}, never negative. */
    public static long remainingNanos(long nowNanos, long deadlineNanos) {
        return Math.max(0, deadlineNanos - nowNanos);
    }
}
