package dev.fenceline.election;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Immutable, validated configuration of an {@link ElectionSession} / {@link ElectionAdmin}.
 *
 * <p>Defaults (for the default TTL of 5 s): renewInterval = ttl/5 (1 s), safetyMargin = ttl/5 (1 s),
 * callTimeout = renewInterval (1 s), connectTimeout 5 s, retry backoff 50 ms .. 1 s, resignHoldOff 1 s,
 * keyPrefix {@code /fenceline/}, closeOnShutdown true, meters to {@link Metrics#globalRegistry}.
 *
 * <p>{@link Builder#build()} rejects inconsistent values with a message naming the property, the limit and
 * the value, e.g. {@code renewInterval must be less than ttl/3 (1666ms) but was 2000ms}.
 */
public final class ElectionConfig {
    /** etcd's smallest effective lease TTL with default raft timings is 2 s (it raises smaller grants). */
    public static final Duration MIN_TTL = Duration.ofSeconds(2);

    public static final Duration MAX_TTL = Duration.ofHours(1);

    private final List<String> endpoints;
    private final String keyPrefix;
    private final Duration ttl;
    private final Duration renewInterval;
    private final Duration safetyMargin;
    private final Duration callTimeout;
    private final Duration connectTimeout;
    private final Duration retryBackoffMin;
    private final Duration retryBackoffMax;
    private final Duration resignHoldOff;
    private final Duration leaseLossHoldOff;
    private final MeterRegistry meterRegistry;
    private final boolean closeOnShutdown;
    private final java.nio.file.Path tlsCaFile;
    private final java.nio.file.Path tlsClientCertFile;
    private final java.nio.file.Path tlsClientKeyFile;
    private final String username;
    private final String password;

    private ElectionConfig(Builder b) {
        this.tlsCaFile = b.tlsCaFile;
        this.tlsClientCertFile = b.tlsClientCertFile;
        this.tlsClientKeyFile = b.tlsClientKeyFile;
        this.username = b.username;
        this.password = b.password;
        this.endpoints = List.copyOf(b.endpoints);
        this.keyPrefix = b.keyPrefix;
        this.ttl = b.ttl;
        this.renewInterval = b.renewInterval;
        this.safetyMargin = b.safetyMargin;
        this.callTimeout = b.callTimeout;
        this.connectTimeout = b.connectTimeout;
        this.retryBackoffMin = b.retryBackoffMin;
        this.retryBackoffMax = b.retryBackoffMax;
        this.resignHoldOff = b.resignHoldOff;
        this.leaseLossHoldOff = b.leaseLossHoldOff;
        this.meterRegistry = b.meterRegistry;
        this.closeOnShutdown = b.closeOnShutdown;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder preloaded with this configuration (for variations in tests and tools). */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.endpoints = new ArrayList<>(endpoints);
        b.keyPrefix = keyPrefix;
        b.ttl = ttl;
        b.renewInterval = renewInterval;
        b.safetyMargin = safetyMargin;
        b.callTimeout = callTimeout;
        b.connectTimeout = connectTimeout;
        b.retryBackoffMin = retryBackoffMin;
        b.retryBackoffMax = retryBackoffMax;
        b.resignHoldOff = resignHoldOff;
        b.leaseLossHoldOff = leaseLossHoldOff;
        b.meterRegistry = meterRegistry;
        b.closeOnShutdown = closeOnShutdown;
        b.tlsCaFile = tlsCaFile;
        b.tlsClientCertFile = tlsClientCertFile;
        b.tlsClientKeyFile = tlsClientKeyFile;
        b.username = username;
        b.password = password;
        return b;
    }

    /** True when the endpoints are {@code https://} (then {@link #tlsCaFile()} is set). */
    public boolean tls() {
        return tlsCaFile != null;
    }

    /** PEM bundle of the CAs that may sign the etcd server certificates; null for plain http. */
    public java.nio.file.Path tlsCaFile() {
        return tlsCaFile;
    }

    /** PEM client certificate for mutual TLS; null if none. */
    public java.nio.file.Path tlsClientCertFile() {
        return tlsClientCertFile;
    }

    /** PEM (PKCS#8) private key of {@link #tlsClientCertFile()}; null if none. */
    public java.nio.file.Path tlsClientKeyFile() {
        return tlsClientKeyFile;
    }

    /** etcd user (RBAC); null without authentication. */
    public String username() {
        return username;
    }

    /** Password of {@link #username()}; never printed by {@link #toString()}. */
    public String password() {
        return password;
    }

    public List<String> endpoints() {
        return endpoints;
    }

    public String keyPrefix() {
        return keyPrefix;
    }

    public Duration ttl() {
        return ttl;
    }

    public Duration renewInterval() {
        return renewInterval;
    }

    public Duration safetyMargin() {
        return safetyMargin;
    }

    public Duration callTimeout() {
        return callTimeout;
    }

    public Duration connectTimeout() {
        return connectTimeout;
    }

    public Duration retryBackoffMin() {
        return retryBackoffMin;
    }

    public Duration retryBackoffMax() {
        return retryBackoffMax;
    }

    public Duration resignHoldOff() {
        return resignHoldOff;
    }

    /**
     * How long a candidate waits, after it first sees the leader record gone without a resign marker (lease
     * expired or revoked), before campaigning; zero = off (the default).
     */
    public Duration leaseLossHoldOff() {
        return leaseLossHoldOff;
    }

    public MeterRegistry meterRegistry() {
        return meterRegistry;
    }

    public boolean closeOnShutdown() {
        return closeOnShutdown;
    }

    /** The documented keys of {@code election} under this configuration's prefix. */
    public ElectionKeys keys(String election) {
        return ElectionKeys.of(keyPrefix, election);
    }

    @Override
    public String toString() {
        return "ElectionConfig{endpoints=" + endpoints + ", keyPrefix=" + keyPrefix + ", ttl=" + ms(ttl)
                + ", renewInterval=" + ms(renewInterval) + ", safetyMargin=" + ms(safetyMargin) + ", callTimeout="
                + ms(callTimeout) + ", connectTimeout=" + ms(connectTimeout) + ", retryBackoff=" + ms(retryBackoffMin)
                + ".." + ms(retryBackoffMax) + ", resignHoldOff=" + ms(resignHoldOff)
                + (leaseLossHoldOff.isZero() ? "" : ", leaseLossHoldOff=" + ms(leaseLossHoldOff)) + ", closeOnShutdown="
                + closeOnShutdown + (tlsCaFile != null ? ", tlsCaFile=" + tlsCaFile : "")
                + (tlsClientCertFile != null
                        ? ", tlsClientCertFile=" + tlsClientCertFile + ", tlsClientKeyFile=" + tlsClientKeyFile
                        : "")
                + (username != null ? ", username=" + username + ", password=***" : "") + "}";
    }

    static String ms(Duration d) {
        return d == null ? "null" : d.toMillis() + "ms";
    }

    /** Mutable builder; nothing is checked until {@link #build()}. */
    public static final class Builder {
        private List<String> endpoints = new ArrayList<>();
        private String keyPrefix = "/fenceline/";
        private Duration ttl = Duration.ofSeconds(5);
        private Duration renewInterval;
        private Duration safetyMargin;
        private Duration callTimeout;
        private Duration connectTimeout = Duration.ofSeconds(5);
        private Duration retryBackoffMin = Duration.ofMillis(50);
        private Duration retryBackoffMax = Duration.ofSeconds(1);
        private Duration resignHoldOff = Duration.ofSeconds(1);
        private Duration leaseLossHoldOff = Duration.ZERO;
        private MeterRegistry meterRegistry = Metrics.globalRegistry;
        private boolean closeOnShutdown = true;
        private java.nio.file.Path tlsCaFile;
        private java.nio.file.Path tlsClientCertFile;
        private java.nio.file.Path tlsClientKeyFile;
        private String username;
        private String password;

        private Builder() {}

        /**
         * CA bundle (PEM) that signed the etcd server certificates; required for {@code https://} endpoints,
         * rejected for {@code http://} ones. Env: {@code FENCELINE_ETCD_CA}.
         */
        public Builder tlsCaFile(java.nio.file.Path caFile) {
            this.tlsCaFile = caFile;
            return this;
        }

        /**
         * Client certificate and its private key (PEM; the key in PKCS#8) for etcd's {@code --client-cert-auth}.
         * Env: {@code FENCELINE_ETCD_CERT}, {@code FENCELINE_ETCD_KEY}.
         */
        public Builder tlsClientCert(java.nio.file.Path certFile, java.nio.file.Path keyFile) {
            this.tlsClientCertFile = certFile;
            this.tlsClientKeyFile = keyFile;
            return this;
        }

        /**
         * etcd RBAC credentials. The user's role needs readwrite on {@code keyPrefix} (as a prefix); lease grant,
         * renewal and revoke need no key permission. Env: {@code FENCELINE_ETCD_USER}, {@code FENCELINE_ETCD_PASSWORD}.
         */
        public Builder credentials(String username, String password) {
            this.username = username;
            this.password = password;
            return this;
        }

        /**
         * Reads the connection settings from environment variables (absent ones leave the builder unchanged):
         * {@code FENCELINE_ETCD} (endpoints, comma-separated), {@code FENCELINE_ETCD_CA}, {@code FENCELINE_ETCD_CERT},
         * {@code FENCELINE_ETCD_KEY}, {@code FENCELINE_ETCD_USER}, {@code FENCELINE_ETCD_PASSWORD} (or
         * {@code FENCELINE_ETCD_PASSWORD_FILE}: the first line of that file), {@code FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF}.
         *
         * @throws ElectionException naming the variable and the value when a password file is unreadable or a
         *     duration is malformed
         */
        public Builder environment(java.util.Map<String, String> env) {
            if (env.get("FENCELINE_ETCD") != null) {
                endpointsCsv(env.get("FENCELINE_ETCD"));
            }
            if (env.get("FENCELINE_ETCD_CA") != null) {
                tlsCaFile = java.nio.file.Path.of(env.get("FENCELINE_ETCD_CA"));
            }
            if (env.get("FENCELINE_ETCD_CERT") != null) {
                tlsClientCertFile = java.nio.file.Path.of(env.get("FENCELINE_ETCD_CERT"));
            }
            if (env.get("FENCELINE_ETCD_KEY") != null) {
                tlsClientKeyFile = java.nio.file.Path.of(env.get("FENCELINE_ETCD_KEY"));
            }
            if (env.get("FENCELINE_ETCD_USER") != null) {
                username = env.get("FENCELINE_ETCD_USER");
            }
            if (env.get("FENCELINE_ETCD_PASSWORD") != null) {
                password = env.get("FENCELINE_ETCD_PASSWORD");
            }
            if (env.get("FENCELINE_ETCD_PASSWORD_FILE") != null) {
                password = readPasswordFile(
                        "FENCELINE_ETCD_PASSWORD_FILE", java.nio.file.Path.of(env.get("FENCELINE_ETCD_PASSWORD_FILE")));
            }
            if (env.get("FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF") != null) {
                leaseLossHoldOff = parseDuration(
                        "FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF", env.get("FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF"));
            }
            return this;
        }

        /**
         * etcd client URLs, e.g. {@code http://127.0.0.1:2379}; {@code 127.0.0.1:2379} (no scheme) means http, as
         * with etcdctl. Required, at least one.
         */
        public Builder endpoints(List<String> endpoints) {
            this.endpoints = endpoints == null ? new ArrayList<>() : new ArrayList<>(endpoints);
            return this;
        }

        public Builder endpoints(String... endpoints) {
            return endpoints(List.of(endpoints));
        }

        /** Comma-separated endpoints, as in {@code FENCELINE_ETCD}. */
        public Builder endpointsCsv(String csv) {
            List<String> list = new ArrayList<>();
            if (csv != null) {
                for (String s : csv.split(",")) {
                    if (!s.isBlank()) {
                        list.add(s.trim());
                    }
                }
            }
            return endpoints(list);
        }

        /** Root of all keys; an election's keys live under {@code <keyPrefix><election>/}. Default {@code /fenceline/}. */
        public Builder keyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
            return this;
        }

        /** Lease TTL, whole seconds, 2 s .. 1 h. Default 5 s. */
        public Builder ttl(Duration ttl) {
            this.ttl = ttl;
            return this;
        }

        /** How often the lease keeper renews the lease. Must be less than ttl/3. Default ttl/5. */
        public Builder renewInterval(Duration renewInterval) {
            this.renewInterval = renewInterval;
            return this;
        }

        /**
         * Subtracted from the lease TTL for the local validity deadline (covers clock-rate drift between this
         * host and the etcd leader, and scheduling delay of the deadline timer). Must be positive and less than
         * ttl − renewInterval. Default ttl/5.
         */
        public Builder safetyMargin(Duration safetyMargin) {
            this.safetyMargin = safetyMargin;
            return this;
        }

        /** Deadline of every single etcd call. 10 ms .. ttl − safetyMargin. Default = renewInterval. */
        public Builder callTimeout(Duration callTimeout) {
            this.callTimeout = callTimeout;
            return this;
        }

        /** Bound on {@link ElectionSession#open} / {@link ElectionAdmin#connect} reaching etcd. Default 5 s. */
        public Builder connectTimeout(Duration connectTimeout) {
            this.connectTimeout = connectTimeout;
            return this;
        }

        /** Exponential backoff (full jitter) between failed etcd attempts. Default 50 ms .. 1 s. */
        public Builder retryBackoff(Duration min, Duration max) {
            this.retryBackoffMin = min;
            this.retryBackoffMax = max;
            return this;
        }

        /** After resigning, a candidate waits this long before campaigning again (lets others take over). Default 1 s. */
        public Builder resignHoldOff(Duration resignHoldOff) {
            this.resignHoldOff = resignHoldOff;
            return this;
        }

        /**
         * Defence against an etcd whose stalled leader revokes live leases (etcd before 3.4.31 / 3.5.13): when the
         * leader record vanishes without the resign marker a voluntary resign writes, a candidate waits this long
         * from its first sight of the absence before campaigning, so the old leader's local deadline
         * ({@code <= its last confirmed renewal + ttl - safetyMargin}) has passed first. 0 (default) = off, else
         * between ttl and 10 x ttl; costs that much extra failover after a crash, nothing after a resign.
         * Env: {@code FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF} (e.g. {@code 10s}, {@code 5000ms}, {@code PT10S}).
         */
        public Builder leaseLossHoldOff(Duration leaseLossHoldOff) {
            this.leaseLossHoldOff = leaseLossHoldOff;
            return this;
        }

        /** Where meters go. Default {@link Metrics#globalRegistry}. */
        public Builder meterRegistry(MeterRegistry meterRegistry) {
            this.meterRegistry = meterRegistry;
            return this;
        }

        /** Register a JVM shutdown hook that closes the session (resign all, revoke lease). Default true. */
        public Builder closeOnShutdown(boolean closeOnShutdown) {
            this.closeOnShutdown = closeOnShutdown;
            return this;
        }

        /** Validates and builds. @throws ElectionException naming property, limit and value */
        public ElectionConfig build() {
            if (endpoints.isEmpty()) {
                throw new ElectionException("endpoints must contain at least one etcd client URL "
                        + "(e.g. http://127.0.0.1:2379) but was empty");
            }
            endpoints = withDefaultScheme(endpoints);
            for (String e : endpoints) {
                checkEndpoint(e);
            }
            checkSecurity();
            if (keyPrefix == null
                    || !keyPrefix.startsWith("/")
                    || !keyPrefix.endsWith("/")
                    || keyPrefix.contains("//")) {
                throw new ElectionException("keyPrefix must start and end with '/' (e.g. /fenceline/) but was: "
                        + (keyPrefix == null ? "null" : "'" + keyPrefix + "'"));
            }
            require("ttl", ttl);
            if (ttl.compareTo(MIN_TTL) < 0 || ttl.compareTo(MAX_TTL) > 0) {
                throw new ElectionException(
                        "ttl must be between " + ms(MIN_TTL) + " and " + ms(MAX_TTL) + " but was " + ms(ttl));
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
            require("connectTimeout", connectTimeout);
            if (connectTimeout.isNegative()
                    || connectTimeout.isZero()
                    || connectTimeout.compareTo(Duration.ofMinutes(5)) > 0) {
                throw new ElectionException(
                        "connectTimeout must be greater than 0 and at most 300000ms but was " + ms(connectTimeout));
            }
            require("retryBackoffMin", retryBackoffMin);
            require("retryBackoffMax", retryBackoffMax);
            if (retryBackoffMin.isNegative() || retryBackoffMin.isZero()) {
                throw new ElectionException("retryBackoffMin must be greater than 0 but was " + ms(retryBackoffMin));
            }
            if (retryBackoffMax.compareTo(retryBackoffMin) < 0) {
                throw new ElectionException("retryBackoffMax must be at least retryBackoffMin (" + ms(retryBackoffMin)
                        + ") but was " + ms(retryBackoffMax));
            }
            require("resignHoldOff", resignHoldOff);
            if (resignHoldOff.isNegative()) {
                throw new ElectionException("resignHoldOff must be at least 0ms but was " + ms(resignHoldOff));
            }
            require("leaseLossHoldOff", leaseLossHoldOff);
            Duration holdOffMax = ttl.multipliedBy(10);
            if (!leaseLossHoldOff.isZero()
                    && (leaseLossHoldOff.compareTo(ttl) < 0 || leaseLossHoldOff.compareTo(holdOffMax) > 0)) {
                throw new ElectionException("leaseLossHoldOff must be 0ms (off) or between ttl (" + ms(ttl)
                        + ") and 10 x ttl (" + ms(holdOffMax) + ") but was " + ms(leaseLossHoldOff));
            }
            if (meterRegistry == null) {
                throw new ElectionException(
                        "meterRegistry must not be null (use Metrics.globalRegistry for the default)");
            }
            Builder resolved = copy();
            resolved.renewInterval = renew;
            resolved.safetyMargin = margin;
            resolved.callTimeout = call;
            return new ElectionConfig(resolved);
        }

        private Builder copy() {
            Builder b = new Builder();
            b.endpoints = endpoints;
            b.keyPrefix = keyPrefix;
            b.ttl = ttl;
            b.renewInterval = renewInterval;
            b.safetyMargin = safetyMargin;
            b.callTimeout = callTimeout;
            b.connectTimeout = connectTimeout;
            b.retryBackoffMin = retryBackoffMin;
            b.retryBackoffMax = retryBackoffMax;
            b.resignHoldOff = resignHoldOff;
            b.leaseLossHoldOff = leaseLossHoldOff;
            b.meterRegistry = meterRegistry;
            b.closeOnShutdown = closeOnShutdown;
            b.tlsCaFile = tlsCaFile;
            b.tlsClientCertFile = tlsClientCertFile;
            b.tlsClientKeyFile = tlsClientKeyFile;
            b.username = username;
            b.password = password;
            return b;
        }

        /**
         * The password in {@code file}: its first line, without the line end (as etcdctl and most secret mounts
         * have it). @throws ElectionException naming {@code what} and the path when it cannot be read
         */
        public static String readPasswordFile(String what, java.nio.file.Path file) {
            List<String> lines;
            try {
                lines = java.nio.file.Files.readAllLines(file);
            } catch (java.io.IOException | SecurityException e) {
                throw new ElectionException(what + " must name a readable file but '" + file + "' is not readable ("
                        + e.getClass().getSimpleName() + ")");
            }
            if (lines.isEmpty() || lines.get(0).isEmpty()) {
                throw new ElectionException(
                        what + " must name a file whose first line is the password but '" + file + "' has none");
            }
            return lines.get(0);
        }

        /** {@code 10s}, {@code 5000ms}, {@code 2m} or ISO-8601 ({@code PT10S}). */
        static Duration parseDuration(String what, String text) {
            String t = text.trim();
            try {
                if (t.startsWith("P") || t.startsWith("p")) {
                    return Duration.parse(t);
                }
                if (t.endsWith("ms")) {
                    return Duration.ofMillis(
                            Long.parseLong(t.substring(0, t.length() - 2).trim()));
                }
                if (t.endsWith("s")) {
                    return Duration.ofSeconds(
                            Long.parseLong(t.substring(0, t.length() - 1).trim()));
                }
                if (t.endsWith("m")) {
                    return Duration.ofMinutes(
                            Long.parseLong(t.substring(0, t.length() - 1).trim()));
                }
            } catch (RuntimeException e) {
                // fall through to the message below
            }
            throw new ElectionException(
                    what + " must be a duration like 10s, 5000ms, 2m or PT10S but was '" + text + "'");
        }

        private static void require(String name, Object value) {
            if (value == null) {
                throw new ElectionException(name + " must not be null");
            }
        }

        private void checkSecurity() {
            long https = endpoints.stream()
                    .filter(e -> e.trim().startsWith("https://"))
                    .count();
            if (https != 0 && https != endpoints.size()) {
                throw new ElectionException("endpoints must be all http:// or all https:// but were " + endpoints);
            }
            if (https > 0 && tlsCaFile == null) {
                throw new ElectionException(
                        "tlsCaFile must be set for https:// endpoints (the PEM CA bundle that signed "
                                + "the etcd server certificates) but was not set; endpoints " + endpoints);
            }
            if (https == 0 && (tlsCaFile != null || tlsClientCertFile != null)) {
                throw new ElectionException(
                        "tlsCaFile/tlsClientCert need https:// endpoints but the endpoints are " + endpoints);
            }
            if ((tlsClientCertFile == null) != (tlsClientKeyFile == null)) {
                throw new ElectionException("tlsClientCert needs both a certificate and a key file but got certificate="
                        + tlsClientCertFile + " key=" + tlsClientKeyFile);
            }
            for (java.nio.file.Path[] f :
                    new java.nio.file.Path[][] {{tlsCaFile}, {tlsClientCertFile}, {tlsClientKeyFile}}) {
                if (f[0] != null && !java.nio.file.Files.isReadable(f[0])) {
                    throw new ElectionException((f[0] == tlsCaFile
                                    ? "tlsCaFile"
                                    : f[0] == tlsClientCertFile ? "tlsClientCert certificate" : "tlsClientCert key")
                            + " must be a readable PEM file but '" + f[0]
                            + "' is not readable");
                }
            }
            if ((username == null) != (password == null) || (username != null && username.isBlank())) {
                throw new ElectionException("credentials need a non-blank username and a password but got username="
                        + (username == null ? "null" : "'" + username + "'") + " password="
                        + (password == null ? "null" : "***"));
            }
        }

        /** {@code host:port} without a scheme means {@code http://host:port}, as etcdctl reads it. */
        static List<String> withDefaultScheme(List<String> given) {
            List<String> out = new ArrayList<>(given.size());
            for (String e : given) {
                out.add(e != null && !e.isBlank() && !e.contains("://") ? "http://" + e.trim() : e);
            }
            return out;
        }

        private static void checkEndpoint(String e) {
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
            if (why == null && (uri.getHost() == null || uri.getHost().isEmpty())) {
                why = "it has no host";
            } else if (why == null && (uri.getPort() < 1 || uri.getPort() > 65535)) {
                why = "it has no port in 1..65535";
            } else if (why == null && uri.getPath() != null && !uri.getPath().isEmpty() && !"/".equals(uri.getPath())) {
                why = "it has a path";
            }
            if (why != null) {
                throw new ElectionException("endpoints must be etcd client URLs like http://127.0.0.1:2379 or "
                        + "https://etcd1:2379 but '" + e
                        + "' is not: " + why);
            }
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ElectionConfig c && c.toString().equals(toString()) && c.meterRegistry == meterRegistry;
    }

    @Override
    public int hashCode() {
        return Objects.hash(toString());
    }
}
