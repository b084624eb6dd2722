package dev.fenceline.election;

import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Checks the endpoints, key prefix and operational settings of an {@link ElectionConfig} where they enter, in
 * {@link ElectionConfig.Builder#build()}, each failure naming the property, the limit and the value. The lease
 * timings are checked by {@link LeaseTimings}, the TLS files and credentials by {@link EtcdSecurity}.
 */
final class ConfigValidation {
    private ConfigValidation() {}

    /**
     * The endpoints with their scheme ({@code host:port} means {@code http://host:port}, as etcdctl reads it).
     *
     * @throws ElectionException if there is none or one is not an etcd client URL a client can dial
     */
    static List<String> endpoints(List<String> given) {
        if (given.isEmpty()) {
            throw new ElectionException("endpoints must contain at least one etcd client URL "
                    + "(e.g. http://127.0.0.1:2379) but was empty");
        }
        List<String> out = new ArrayList<>(given.size());
        for (String e : given) {
            out.add(e != null && !e.isBlank() && !e.contains("://") ? "http://" + e.trim() : e);
        }
        for (String e : out) {
            checkEndpoint(e);
        }
        return out;
    }

    private static void checkEndpoint(@Nullable String e) {
        String why = null;
        URI uri = null;
        if (e == null || e.isBlank()) {
            why = "it is empty";
        } else if (!e.trim().startsWith("http://") && !e.trim().startsWith("https://")) {
            why = "it must start with http:// or https://";
        } else {
            try {
                uri = URI.create(e.trim());
            } catch (IllegalArgumentException ex) {
                why = "it is not a URI (" + ex.getMessage() + ")";
            }
        }
        // uri is set exactly when no reason was found above
        if (why == null && uri != null) {
            if (uri.getHost() == null || uri.getHost().isEmpty()) {
                why = "it has no host";
            } else if (uri.getPort() < 1 || uri.getPort() > 65535) {
                why = "it has no port in 1..65535";
            } else if (uri.getPath() != null && !uri.getPath().isEmpty() && !"/".equals(uri.getPath())) {
                why = "it has a path";
            }
        }
        if (why != null) {
            throw new ElectionException("endpoints must be etcd client URLs like http://127.0.0.1:2379 or "
                    + "https://etcd1:2379 but '" + e
                    + "' is not: " + why);
        }
    }

    /** Every election key is {@code <keyPrefix><election>/...}, so the prefix must be one clean directory. */
    static void keyPrefix(@Nullable String keyPrefix) {
        if (keyPrefix == null || !keyPrefix.startsWith("/") || !keyPrefix.endsWith("/") || keyPrefix.contains("//")) {
            throw new ElectionException("keyPrefix must start and end with '/' (e.g. /fenceline/) but was: "
                    + (keyPrefix == null ? "null" : "'" + keyPrefix + "'"));
        }
    }

    static void connectTimeout(Duration connectTimeout) {
        require("connectTimeout", connectTimeout);
        if (connectTimeout.isNegative()
                || connectTimeout.isZero()
                || connectTimeout.compareTo(Duration.ofMinutes(5)) > 0) {
            throw new ElectionException(
                    "connectTimeout must be greater than 0 and at most 300000ms but was " + ms(connectTimeout));
        }
    }

    static void retryBackoff(Duration min, Duration max) {
        require("retryBackoffMin", min);
        require("retryBackoffMax", max);
        if (min.isNegative() || min.isZero()) {
            throw new ElectionException("retryBackoffMin must be greater than 0 but was " + ms(min));
        }
        if (max.compareTo(min) < 0) {
            throw new ElectionException(
                    "retryBackoffMax must be at least retryBackoffMin (" + ms(min) + ") but was " + ms(max));
        }
    }

    static void resignHoldOff(Duration resignHoldOff) {
        require("resignHoldOff", resignHoldOff);
        if (resignHoldOff.isNegative()) {
            throw new ElectionException("resignHoldOff must be at least 0ms but was " + ms(resignHoldOff));
        }
    }

    /**
     * Off, or at least ttl, so an old leader's local deadline has passed before a candidate campaigns; at most
     * 10 x ttl, since every failover after a crash waits that long.
     */
    static void leaseLossHoldOff(Duration leaseLossHoldOff, Duration ttl) {
        require("leaseLossHoldOff", leaseLossHoldOff);
        Duration max = ttl.multipliedBy(10);
        if (!leaseLossHoldOff.isZero()
                && (leaseLossHoldOff.compareTo(ttl) < 0 || leaseLossHoldOff.compareTo(max) > 0)) {
            throw new ElectionException("leaseLossHoldOff must be 0ms (off) or between ttl (" + ms(ttl)
                    + ") and 10 x ttl (" + ms(max) + ") but was " + ms(leaseLossHoldOff));
        }
    }

    static void meterRegistry(@Nullable MeterRegistry meterRegistry) {
        if (meterRegistry == null) {
            throw new ElectionException("meterRegistry must not be null (use Metrics.globalRegistry for the default)");
        }
    }

    /** A duration as the messages (and {@link ElectionConfig#toString()}) show it. */
    static String ms(@Nullable Duration d) {
        return d == null ? "null" : d.toMillis() + "ms";
    }

    static void require(String name, @Nullable Object value) {
        if (value == null) {
            throw new ElectionException(name + " must not be null");
        }
    }
}
