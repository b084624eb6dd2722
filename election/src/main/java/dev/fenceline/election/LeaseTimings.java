package dev.fenceline.election;

import static dev.fenceline.election.ConfigValidation.ms;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The lease timings of an {@link ElectionConfig} (ttl, renewInterval, safetyMargin, callTimeout), the unset ones
 * derived from the ttl, each checked against the limit the ones before it set.
 *
 * <p>The chain, with what each limit guarantees: renewInterval &lt; ttl/3, so after two renewals in a row fail a
 * third is still sent before the lease expires; safetyMargin &lt; ttl − renewInterval, so
 * the deadline a confirmed renewal sets (its send time + ttl − safetyMargin) lies after the next renewal is sent;
 * callTimeout ≤ ttl − safetyMargin, so a renewal times out no later than the validity it would extend ends.
 */
record LeaseTimings(Duration ttl, Duration renewInterval, Duration safetyMargin, Duration callTimeout) {

    /**
     * The timings with the defaults filled in: renewInterval = ttl/5, safetyMargin = ttl/5, callTimeout =
     * renewInterval. @throws ElectionException naming property, limit and value
     */
    static LeaseTimings resolve(
            Duration ttl,
            @Nullable Duration renewInterval,
            @Nullable Duration safetyMargin,
            @Nullable Duration callTimeout) {
        ConfigValidation.require("ttl", ttl);
        if (ttl.compareTo(ElectionConfig.MIN_TTL) < 0 || ttl.compareTo(ElectionConfig.MAX_TTL) > 0) {
            throw new ElectionException("ttl must be between " + ms(ElectionConfig.MIN_TTL) + " and "
                    + ms(ElectionConfig.MAX_TTL) + " but was " + ms(ttl));
        }
        if (ttl.toMillis() % 1000 != 0) {
            throw new ElectionException(
                    "ttl must be a whole number of seconds (etcd lease TTLs are seconds) but was " + ms(ttl));
        }
        Duration renew = renewInterval != null ? renewInterval : ttl.dividedBy(5);
        Duration third = ttl.dividedBy(3);
        if (renew.isNegative() || renew.isZero() || renew.compareTo(third) >= 0) {
            throw new ElectionException("renewInterval must be greater than 0 and less than ttl/3 (" + ms(third)
                    + ") but was " + ms(renew));
        }
        Duration margin = safetyMargin != null ? safetyMargin : ttl.dividedBy(5);
        Duration marginLimit = ttl.minus(renew);
        if (margin.isNegative() || margin.isZero() || margin.compareTo(marginLimit) >= 0) {
            throw new ElectionException("safetyMargin must be greater than 0 and less than ttl - renewInterval ("
                    + ms(marginLimit) + ") but was " + ms(margin));
        }
        Duration call = callTimeout != null ? callTimeout : renew;
        Duration callLimit = ttl.minus(margin);
        if (call.compareTo(Duration.ofMillis(10)) < 0 || call.compareTo(callLimit) > 0) {
            throw new ElectionException("callTimeout must be between 10ms and ttl - safetyMargin (" + ms(callLimit)
                    + ") but was " + ms(call));
        }
        return new LeaseTimings(ttl, renew, margin, call);
    }
}
