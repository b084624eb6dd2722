package dev.fenceline.faults.check;

import java.time.Duration;
import java.util.Objects;

/**
 * @param livenessBound        (e): after a heal, some leader must commit within this (derive it from the TTL).
 * @param markTimeAmbiguity    (b): a mark's accepted_at and a batch's committed_at are timestamps, not commit
 *                             order. A batch stamped less than this after a newer mark may legitimately have
 *                             committed before that mark did (its transaction started earlier); only batches
 *                             stamped later than {@code accepted_at + markTimeAmbiguity} are violations.
 * @param requireValidityWindows (f): when true, a history with leaders but no validity records is a violation
 *                             (the property cannot be checked); when false it is reported as unavailable.
 * @param ttl                  the election's lease TTL: the succession bound of a hung etcd member is TTL + 1 s, and
 *                             a stalled etcd member's aftermath (validity overlaps reported apart) lasts 3 TTL + 1 s
 *                             after its heal (a delayed fdatasync of TTL + 1 s, then a lease's TTL twice)
 */
public record CheckerConfig(
        Duration livenessBound, Duration markTimeAmbiguity, boolean requireValidityWindows, Duration ttl) {
    /** With the soak's default TTL of 3 s. */
    public CheckerConfig(Duration livenessBound, Duration markTimeAmbiguity, boolean requireValidityWindows) {
        this(livenessBound, markTimeAmbiguity, requireValidityWindows, Duration.ofSeconds(3));
    }

    public CheckerConfig {
        Objects.requireNonNull(ttl, "ttl");
        if (ttl.isNegative() || ttl.isZero()) {
            throw new IllegalArgumentException("ttl must be > 0, got " + ttl);
        }
        Objects.requireNonNull(livenessBound, "livenessBound");
        Objects.requireNonNull(markTimeAmbiguity, "markTimeAmbiguity");
        if (livenessBound.isNegative() || livenessBound.isZero()) {
            throw new IllegalArgumentException("livenessBound must be > 0, got " + livenessBound);
        }
        if (markTimeAmbiguity.isNegative()) {
            throw new IllegalArgumentException("markTimeAmbiguity must be >= 0, got " + markTimeAmbiguity);
        }
    }

    /** A bound derived from the election TTL: a lease must expire (TTL), a new leader be elected and commit. */
    public static CheckerConfig forTtl(Duration ttl) {
        return new CheckerConfig(ttl.multipliedBy(10).plusSeconds(30), Duration.ZERO, false, ttl);
    }

    /** A hung etcd member: a successor should be leader within this of the old leader's death or freeze. */
    public Duration successionBound() {
        return ttl.plusSeconds(1);
    }

    /** How long after a stalled etcd member (slow disk, hung process) is healed its effects may still show. */
    public Duration etcdStallAftermath() {
        return ttl.multipliedBy(3).plusSeconds(1);
    }

    public CheckerConfig withMarkTimeAmbiguity(Duration d) {
        return new CheckerConfig(livenessBound, d, requireValidityWindows, ttl);
    }

    public CheckerConfig withRequireValidityWindows(boolean b) {
        return new CheckerConfig(livenessBound, markTimeAmbiguity, b, ttl);
    }
}
