package dev.fenceline.election;

import static dev.fenceline.election.ConfigValidation.ms;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

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
    private final LeaseTimings timings;
    private final Duration connectTimeout;
    private final Duration retryBackoffMin;
    private final Duration retryBackoffMax;
    private final Duration resignHoldOff;
    private final Duration leaseLossHoldOff;
    private final MeterRegistry meterRegistry;
    private final boolean closeOnShutdown;
    private final EtcdSecurity security;

    /** Takes the checked values; {@code b}'s for the rest, which need no resolving. */
    private ElectionConfig(Builder b, List<String> endpoints, EtcdSecurity security, LeaseTimings timings) {
        this.endpoints = List.copyOf(endpoints);
        this.security = security;
        this.timings = timings;
        this.keyPrefix = b.keyPrefix;
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
        return new Builder()
                .endpoints(endpoints)
                .keyPrefix(keyPrefix)
                .ttl(timings.ttl())
                .renewInterval(timings.renewInterval())
                .safetyMargin(timings.safetyMargin())
                .callTimeout(timings.callTimeout())
                .connectTimeout(connectTimeout)
                .retryBackoff(retryBackoffMin, retryBackoffMax)
                .resignHoldOff(resignHoldOff)
                .leaseLossHoldOff(leaseLossHoldOff)
                .meterRegistry(meterRegistry)
                .closeOnShutdown(closeOnShutdown)
                .tlsCaFile(security.tlsCaFile)
                .tlsClientCert(security.tlsClientCertFile, security.tlsClientKeyFile)
                .credentials(security.username, security.password);
    }

    /** True when the endpoints are {@code https://} (then {@link #tlsCaFile()} is set). */
    public boolean tls() {
        return security.tlsCaFile != null;
    }

    /** PEM bundle of the CAs that may sign the etcd server certificates; null for plain http. */
    public @Nullable Path tlsCaFile() {
        return security.tlsCaFile;
    }

    /** PEM client certificate for mutual TLS; null if none. */
    public @Nullable Path tlsClientCertFile() {
        return security.tlsClientCertFile;
    }

    /** PEM (PKCS#8) private key of {@link #tlsClientCertFile()}; null if none. */
    public @Nullable Path tlsClientKeyFile() {
        return security.tlsClientKeyFile;
    }

    /** etcd user (RBAC); null without authentication. */
    public @Nullable String username() {
        return security.username;
    }

    /** Password of {@link #username()}; null without authentication; never printed by {@link #toString()}. */
    public @Nullable String password() {
        return security.password;
    }

    public List<String> endpoints() {
        return endpoints;
    }

    public String keyPrefix() {
        return keyPrefix;
    }

    public Duration ttl() {
        return timings.ttl();
    }

    public Duration renewInterval() {
        return timings.renewInterval();
    }

    public Duration safetyMargin() {
        return timings.safetyMargin();
    }

    public Duration callTimeout() {
        return timings.callTimeout();
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
        return "ElectionConfig{endpoints=" + endpoints + ", keyPrefix=" + keyPrefix + ", ttl=" + ms(ttl())
                + ", renewInterval=" + ms(renewInterval()) + ", safetyMargin=" + ms(safetyMargin()) + ", callTimeout="
                + ms(callTimeout()) + ", connectTimeout=" + ms(connectTimeout) + ", retryBackoff="
                + ms(retryBackoffMin) + ".." + ms(retryBackoffMax) + ", resignHoldOff=" + ms(resignHoldOff)
                + (leaseLossHoldOff.isZero() ? "" : ", leaseLossHoldOff=" + ms(leaseLossHoldOff)) + ", closeOnShutdown="
                + closeOnShutdown + security + "}";
    }

    /** Mutable builder; nothing is checked until {@link #build()}. */
    public static final class Builder {
        private List<String> endpoints = new ArrayList<>();
        private String keyPrefix = "/fenceline/";
        private Duration ttl = Duration.ofSeconds(5);
        // null = derived from the ttl when built
        private @Nullable Duration renewInterval;
        private @Nullable Duration safetyMargin;
        private @Nullable Duration callTimeout;
        private Duration connectTimeout = Duration.ofSeconds(5);
        private Duration retryBackoffMin = Duration.ofMillis(50);
        private Duration retryBackoffMax = Duration.ofSeconds(1);
        private Duration resignHoldOff = Duration.ofSeconds(1);
        private Duration leaseLossHoldOff = Duration.ZERO;
        private MeterRegistry meterRegistry = Metrics.globalRegistry;
        private boolean closeOnShutdown = true;
        // null = not set
        private @Nullable Path tlsCaFile;
        private @Nullable Path tlsClientCertFile;
        private @Nullable Path tlsClientKeyFile;
        private @Nullable String username;
        private @Nullable String password;

        private Builder() {}

        /**
         * CA bundle (PEM) that signed the etcd server certificates; required for {@code https://} endpoints,
         * rejected for {@code http://} ones. Env: {@code FENCELINE_ETCD_CA}.
         */
        public Builder tlsCaFile(@Nullable Path caFile) {
            this.tlsCaFile = caFile;
            return this;
        }

        /**
         * Client certificate and its private key (PEM; the key in PKCS#8) for etcd's {@code --client-cert-auth}.
         * Env: {@code FENCELINE_ETCD_CERT}, {@code FENCELINE_ETCD_KEY}.
         */
        public Builder tlsClientCert(@Nullable Path certFile, @Nullable Path keyFile) {
            this.tlsClientCertFile = certFile;
            this.tlsClientKeyFile = keyFile;
            return this;
        }

        /**
         * etcd RBAC credentials. The user's role needs readwrite on {@code keyPrefix} (as a prefix); lease grant,
         * renewal and revoke need no key permission. Env: {@code FENCELINE_ETCD_USER}, {@code FENCELINE_ETCD_PASSWORD}.
         */
        public Builder credentials(@Nullable String username, @Nullable String password) {
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
        public Builder environment(Map<String, String> env) {
            // applied one by one, in this order: a later variable wins (the password file over the password)
            TextSettings.ifSet(env, "FENCELINE_ETCD", this::endpointsCsv);
            TextSettings.ifSet(env, "FENCELINE_ETCD_CA", v -> tlsCaFile = Path.of(v));
            TextSettings.ifSet(env, "FENCELINE_ETCD_CERT", v -> tlsClientCertFile = Path.of(v));
            TextSettings.ifSet(env, "FENCELINE_ETCD_KEY", v -> tlsClientKeyFile = Path.of(v));
            TextSettings.ifSet(env, "FENCELINE_ETCD_USER", v -> username = v);
            TextSettings.ifSet(env, "FENCELINE_ETCD_PASSWORD", v -> password = v);
            TextSettings.ifSet(
                    env,
                    "FENCELINE_ETCD_PASSWORD_FILE",
                    v -> password = readPasswordFile("FENCELINE_ETCD_PASSWORD_FILE", Path.of(v)));
            TextSettings.ifSet(
                    env,
                    "FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF",
                    v -> leaseLossHoldOff = TextSettings.parseDuration("FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF", v));
            return this;
        }

        /**
         * etcd client URLs, e.g. {@code http://127.0.0.1:2379}; {@code 127.0.0.1:2379} (no scheme) means http, as
         * with etcdctl. Required, at least one.
         */
        public Builder endpoints(@Nullable List<String> endpoints) {
            this.endpoints = endpoints == null ? new ArrayList<>() : new ArrayList<>(endpoints);
            return this;
        }

        public Builder endpoints(String... endpoints) {
            return endpoints(List.of(endpoints));
        }

        /** Comma-separated endpoints, as in {@code FENCELINE_ETCD}. */
        public Builder endpointsCsv(@Nullable String csv) {
            return endpoints(TextSettings.csv(csv));
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
        public Builder renewInterval(@Nullable Duration renewInterval) {
            this.renewInterval = renewInterval;
            return this;
        }

        /**
         * Subtracted from the lease TTL for the local validity deadline (covers clock-rate drift between this
         * host and the etcd leader, and scheduling delay of the deadline timer). Must be positive and less than
         * ttl − renewInterval. Default ttl/5.
         */
        public Builder safetyMargin(@Nullable Duration safetyMargin) {
            this.safetyMargin = safetyMargin;
            return this;
        }

        /** Deadline of every single etcd call. 10 ms .. ttl − safetyMargin. Default = renewInterval. */
        public Builder callTimeout(@Nullable Duration callTimeout) {
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

        /**
         * Validates and builds; the checks run in this order, so the first failing property is the one named.
         *
         * @throws ElectionException naming property, limit and value
         */
        public ElectionConfig build() {
            List<String> urls = ConfigValidation.endpoints(endpoints);
            EtcdSecurity security =
                    EtcdSecurity.checked(urls, tlsCaFile, tlsClientCertFile, tlsClientKeyFile, username, password);
            ConfigValidation.keyPrefix(keyPrefix);
            LeaseTimings timings = LeaseTimings.resolve(ttl, renewInterval, safetyMargin, callTimeout);
            ConfigValidation.connectTimeout(connectTimeout);
            ConfigValidation.retryBackoff(retryBackoffMin, retryBackoffMax);
            ConfigValidation.resignHoldOff(resignHoldOff);
            ConfigValidation.leaseLossHoldOff(leaseLossHoldOff, timings.ttl());
            ConfigValidation.meterRegistry(meterRegistry);
            return new ElectionConfig(this, urls, security, timings);
        }

        /**
         * The password in {@code file}: its first line, without the line end (as etcdctl and most secret mounts
         * have it). @throws ElectionException naming {@code what} and the path when it cannot be read
         */
        public static String readPasswordFile(String what, Path file) {
            return TextSettings.readPasswordFile(what, file);
        }
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof ElectionConfig c && c.toString().equals(toString()) && c.meterRegistry == meterRegistry;
    }

    @Override
    public int hashCode() {
        return Objects.hash(toString());
    }
}
