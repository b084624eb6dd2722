package dev.fenceline.spring;

import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionKeys;
import dev.fenceline.fencing.FencedWriterConfig;
import dev.fenceline.fencing.FencingToken;
import dev.fenceline.task.LeaderTaskConfig;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * The {@code fenceline.*} properties. Nothing is checked here: {@link #validate} builds the library's own
 * {@link ElectionConfig}, {@link FencedWriterConfig} and {@link DatabaseConfig} from them, so the limits are the
 * library's, and each error is reported against the {@code fenceline.} property it came from (with the value and,
 * where Boot knows it, the line of the configuration file). Defaults that the library computes (renew interval,
 * safety margin, call timeout) stay unset here so that the library computes them from the TTL.
 * <p>
 * {@code ignoreUnknownFields = false}: a {@code fenceline.*} property that matches nothing here (a misspelled
 * {@code fenceline.election.ttll}, in a nested group as much as at the top) fails the binding instead of leaving the
 * default silently in force. Spring's check covers the whole {@code fenceline} subtree; with the auto-configuration,
 * {@link UnknownFencelineProperties} runs the same check first, before {@link #validate}, and names the closest valid
 * properties.
 */
@ConfigurationProperties(prefix = "fenceline", ignoreUnknownFields = false)
public class FencelineProperties implements Validator {

    /** Whether to auto-configure Fenceline at all. */
    private boolean enabled = true;

    /**
     * Refuse to start on a Spring Boot version this starter was not built and tested against. false: start on any
     * version, at the application's own risk.
     */
    private boolean springBootVersionCheck = true;

    /**
     * The fenced resource that the election's term guards in PostgreSQL (the name the application's migrations pass
     * to {@code fencing.protect_table}). Defaults to {@code fenceline.election.name}.
     */
    private String resource;

    private final Election election = new Election();

    private final Writer writer = new Writer();

    private final Datasource datasource = new Datasource();

    private final Migrations migrations = new Migrations();

    private final Task task = new Task();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public boolean isSpringBootVersionCheck() {
        return springBootVersionCheck;
    }

    /**
     * Declared here so that it is a known {@code fenceline.*} property and documented in the metadata; the check
     * itself ({@link SpringBootVersionCheck}) reads it from the Environment, before anything is bound.
     */
    public void setSpringBootVersionCheck(boolean springBootVersionCheck) {
        this.springBootVersionCheck = springBootVersionCheck;
    }

    public String getResource() {
        return resource;
    }

    public void setResource(String resource) {
        this.resource = resource;
    }

    public Election getElection() {
        return election;
    }

    public Writer getWriter() {
        return writer;
    }

    public Datasource getDatasource() {
        return datasource;
    }

    public Migrations getMigrations() {
        return migrations;
    }

    public Task getTask() {
        return task;
    }

    /** The resource the fencing token names: {@code fenceline.resource}, else the election name. */
    public String resourceOrElectionName() {
        return resource != null ? resource : election.name;
    }

    /** The session's configuration, built and checked by {@link ElectionConfig.Builder#build()}. */
    public ElectionConfig electionConfig(MeterRegistry meterRegistry) {
        return Election.PROPERTIES.rethrow(() -> {
            ElectionConfig.Builder b = ElectionConfig.builder()
                    .endpoints(election.endpoints)
                    .keyPrefix(election.keyPrefix)
                    .ttl(election.ttl)
                    .renewInterval(election.renewInterval)
                    .safetyMargin(election.safetyMargin)
                    .callTimeout(election.callTimeout)
                    .connectTimeout(election.connectTimeout)
                    .retryBackoff(election.retryBackoffMin, election.retryBackoffMax)
                    .resignHoldOff(election.resignHoldOff)
                    .tlsCaFile(election.tlsCaFile)
                    .tlsClientCert(election.tlsClientCertFile, election.tlsClientKeyFile)
                    // The application context closes the session (after the tasks that use it); a JVM hook of its
                    // own could close it while those tasks still write.
                    .closeOnShutdown(false);
            if (election.username != null || election.password != null) {
                b.credentials(election.username, election.password);
            }
            if (meterRegistry != null) {
                b.meterRegistry(meterRegistry);
            }
            return b.build();
        });
    }

    /** The writer's configuration, built and checked by {@link FencedWriterConfig.Builder#build()}. */
    public FencedWriterConfig fencedWriterConfig() {
        return Writer.PROPERTIES.rethrow(() -> FencedWriterConfig.builder()
                .maxPayloadBytes(writer.maxPayloadBytes)
                .checkProtectedTables(writer.checkProtectedTables)
                .connectionRecheckAttempts(writer.connectionRecheckAttempts)
                .lockTimeout(writer.getLockTimeout())
                .idleInTransactionSessionTimeout(writer.getIdleInTransactionSessionTimeout())
                .build());
    }

    /** Fenceline's own pool, when {@code fenceline.datasource.url} is set; built and checked by {@link DatabaseConfig}. */
    public DatabaseConfig databaseConfig() {
        return Datasource.PROPERTIES.rethrow(() -> {
            DatabaseConfig.Builder b = DatabaseConfig.builder(datasource.url)
                    .username(datasource.username)
                    .password(datasource.password)
                    .maximumPoolSize(datasource.maximumPoolSize)
                    .connectionTimeout(datasource.connectionTimeout)
                    .lockTimeout(datasource.getLockTimeout())
                    .idleInTransactionSessionTimeout(datasource.getIdleInTransactionSessionTimeout())
                    .statementTimeout(datasource.statementTimeout)
                    .applicationName(datasource.applicationName)
                    .poolName(datasource.poolName);
            if (datasource.minimumIdle != null) {
                b.minimumIdle(datasource.minimumIdle);
            }
            return b.build();
        });
    }

    /**
     * A fenced task's configuration, built and checked by {@link LeaderTaskConfig.Builder}.
     *
     * @param electionName the task's election, or null for its resource's name
     */
    public LeaderTaskConfig leaderTaskConfig(String electionName, MeterRegistry meterRegistry) {
        return Task.PROPERTIES.rethrow(() -> {
            LeaderTaskConfig.Builder b = LeaderTaskConfig.builder()
                    .electionName(electionName)
                    .candidateId(election.candidateId())
                    .metadata(
                            Map.of("pid", Long.toString(ProcessHandle.current().pid())))
                    .interval(task.interval)
                    .idleInterval(task.idleInterval)
                    .failureBackoff(task.failureBackoff)
                    .handoverTimeout(task.handoverTimeout)
                    .startRetryInterval(task.startRetryInterval)
                    .warmUp(task.warmUp);
            if (meterRegistry != null) {
                b.meterRegistry(meterRegistry);
            }
            return b.build();
        });
    }

    /** Checks the election name, candidate id and resource the way the election and the fencing token will. */
    void checkNames() {
        if (election.name != null) {
            Election.PROPERTIES.rethrow(() -> ElectionKeys.requireValidName(election.name, "name"));
        }
        if (resourceOrElectionName() != null) {
            PropertyNames names = resource != null ? TOP_LEVEL : Election.PROPERTIES;
            names.rethrow(() -> FencingToken.of(resourceOrElectionName(), 1, election.candidateId()));
        } else {
            Election.PROPERTIES.rethrow(() -> FencingToken.of("probe", 1, election.candidateId()));
        }
    }

    private static final PropertyNames TOP_LEVEL =
            new PropertyNames("fenceline", Map.of("resource", "resource", "leaderId", "election.candidate-id"));

    @Override
    public boolean supports(Class<?> type) {
        return FencelineProperties.class.isAssignableFrom(type);
    }

    /**
     * Binding-time validation: the first invalid property is rejected with the library's message, naming the
     * {@code fenceline.} property, its limit and its value. Nothing is connected or created while validating.
     */
    @Override
    public void validate(Object target, Errors errors) {
        FencelineProperties p = (FencelineProperties) target;
        if (!p.enabled) {
            return;
        }
        try {
            p.electionConfig(null);
            p.checkNames();
            p.fencedWriterConfig();
            p.leaderTaskConfig(null, null);
            if (p.datasource.url != null) {
                p.databaseConfig();
            }
        } catch (InvalidFencelinePropertyException e) {
            if (e.property().indexOf('.') < 0) {
                errors.reject("fenceline.invalid", e.getMessage());
            } else {
                errors.rejectValue(e.beanPath(), "fenceline.invalid", e.getMessage());
            }
        }
    }

    /** {@code fenceline.election.*}: the etcd session shared by every election of this application, and its election. */
    public static class Election {
        static final PropertyNames PROPERTIES = PropertyNames.of(
                "fenceline.election",
                List.of(
                        "endpoints",
                        "keyPrefix",
                        "ttl",
                        "renewInterval",
                        "safetyMargin",
                        "callTimeout",
                        "connectTimeout",
                        "retryBackoffMin",
                        "retryBackoffMax",
                        "resignHoldOff",
                        "tlsCaFile",
                        "name"),
                Map.of(
                        "tlsCaFile/tlsClientCert",
                        "tls-ca-file",
                        "tlsClientCert certificate",
                        "tls-client-cert-file",
                        "tlsClientCert key",
                        "tls-client-key-file",
                        "tlsClientCert",
                        "tls-client-cert-file",
                        "credentials",
                        "username",
                        "leaderId",
                        "candidate-id",
                        "resource",
                        "name"));

        /**
         * Name of this application's election (1 to 128 characters of [A-Za-z0-9._-]). Without it no
         * LeaderElection bean is created; the session is still there for elections the application creates itself.
         */
        private String name;

        /** This process's candidate id, written as leader_id and into the rejection audit. Defaults to host-pid. */
        private String candidateId;

        /** etcd client URLs, e.g. http://127.0.0.1:2379. Required. */
        private List<String> endpoints = new ArrayList<>();

        /** Root of all keys; an election's keys live under <key-prefix><name>/. */
        private String keyPrefix = "/fenceline/";

        /** Lease TTL, whole seconds, 2s to 1h. */
        private Duration ttl = Duration.ofSeconds(5);

        /** How often the lease is renewed; less than ttl/3. Defaults to ttl/5. */
        private Duration renewInterval;

        /** Subtracted from the TTL for the local validity deadline; less than ttl - renew-interval. Defaults to ttl/5. */
        private Duration safetyMargin;

        /** Deadline of every etcd call, 10ms to ttl - safety-margin. Defaults to renew-interval. */
        private Duration callTimeout;

        /** Bound on reaching etcd when the application starts. */
        private Duration connectTimeout = Duration.ofSeconds(5);

        /** Smallest backoff between failed etcd attempts. */
        private Duration retryBackoffMin = Duration.ofMillis(50);

        /** Largest backoff between failed etcd attempts. */
        private Duration retryBackoffMax = Duration.ofSeconds(1);

        /** After resigning, how long a candidate waits before campaigning again. */
        private Duration resignHoldOff = Duration.ofSeconds(1);

        /** PEM bundle of the CAs that signed the etcd server certificates; required for https:// endpoints. */
        private Path tlsCaFile;

        /** PEM client certificate for etcd's --client-cert-auth (with tls-client-key-file). */
        private Path tlsClientCertFile;

        /** PKCS#8 PEM private key of tls-client-cert-file. */
        private Path tlsClientKeyFile;

        /** etcd RBAC user (with password). */
        private String username;

        /** Password of the etcd user. */
        private String password;

        public String getName() {
            return name;
        }

        public void setName(String name) {
            this.name = name;
        }

        public String getCandidateId() {
            return candidateId;
        }

        public void setCandidateId(String candidateId) {
            this.candidateId = candidateId;
        }

        /** The configured candidate id, else {@code <host>-<pid>}. */
        public String candidateId() {
            if (candidateId != null) {
                return candidateId;
            }
            String host;
            try {
                host = InetAddress.getLocalHost().getHostName();
            } catch (UnknownHostException e) {
                host = "localhost";
            }
            return host + "-" + ProcessHandle.current().pid();
        }

        public List<String> getEndpoints() {
            return endpoints;
        }

        public void setEndpoints(List<String> endpoints) {
            this.endpoints = endpoints;
        }

        public String getKeyPrefix() {
            return keyPrefix;
        }

        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }

        public Duration getTtl() {
            return ttl;
        }

        public void setTtl(Duration ttl) {
            this.ttl = ttl;
        }

        public Duration getRenewInterval() {
            return renewInterval;
        }

        public void setRenewInterval(Duration renewInterval) {
            this.renewInterval = renewInterval;
        }

        public Duration getSafetyMargin() {
            return safetyMargin;
        }

        public void setSafetyMargin(Duration safetyMargin) {
            this.safetyMargin = safetyMargin;
        }

        public Duration getCallTimeout() {
            return callTimeout;
        }

        public void setCallTimeout(Duration callTimeout) {
            this.callTimeout = callTimeout;
        }

        public Duration getConnectTimeout() {
            return connectTimeout;
        }

        public void setConnectTimeout(Duration connectTimeout) {
            this.connectTimeout = connectTimeout;
        }

        public Duration getRetryBackoffMin() {
            return retryBackoffMin;
        }

        public void setRetryBackoffMin(Duration retryBackoffMin) {
            this.retryBackoffMin = retryBackoffMin;
        }

        public Duration getRetryBackoffMax() {
            return retryBackoffMax;
        }

        public void setRetryBackoffMax(Duration retryBackoffMax) {
            this.retryBackoffMax = retryBackoffMax;
        }

        public Duration getResignHoldOff() {
            return resignHoldOff;
        }

        public void setResignHoldOff(Duration resignHoldOff) {
            this.resignHoldOff = resignHoldOff;
        }

        public Path getTlsCaFile() {
            return tlsCaFile;
        }

        public void setTlsCaFile(Path tlsCaFile) {
            this.tlsCaFile = tlsCaFile;
        }

        public Path getTlsClientCertFile() {
            return tlsClientCertFile;
        }

        public void setTlsClientCertFile(Path tlsClientCertFile) {
            this.tlsClientCertFile = tlsClientCertFile;
        }

        public Path getTlsClientKeyFile() {
            return tlsClientKeyFile;
        }

        public void setTlsClientKeyFile(Path tlsClientKeyFile) {
            this.tlsClientKeyFile = tlsClientKeyFile;
        }

        public String getUsername() {
            return username;
        }

        public void setUsername(String username) {
            this.username = username;
        }

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }
    }

    /**
     * The two timeouts every fenced session needs (a write waiting on a deposed leader's row lock fails instead of
     * hanging; a leader paused inside a transaction loses it): set on every session of Fenceline's own pool
     * ({@code fenceline.datasource.*}), and by the writer for each of its transactions ({@code fenceline.writer.*}).
     */
    public abstract static class SessionTimeouts {
        /** lock_timeout, 1ms to 1h (writer: set for each of its transactions). */
        private Duration lockTimeout = Duration.ofSeconds(2);

        /** idle_in_transaction_session_timeout, 100ms to 1h (writer: set for each of its transactions). */
        private Duration idleInTransactionSessionTimeout = Duration.ofSeconds(30);

        public Duration getLockTimeout() {
            return lockTimeout;
        }

        public void setLockTimeout(Duration lockTimeout) {
            this.lockTimeout = lockTimeout;
        }

        public Duration getIdleInTransactionSessionTimeout() {
            return idleInTransactionSessionTimeout;
        }

        public void setIdleInTransactionSessionTimeout(Duration idleInTransactionSessionTimeout) {
            this.idleInTransactionSessionTimeout = idleInTransactionSessionTimeout;
        }
    }

    /** {@code fenceline.writer.*}: the {@link dev.fenceline.fencing.FencedWriter}'s settings. */
    public static class Writer extends SessionTimeouts {
        static final PropertyNames PROPERTIES = PropertyNames.of(
                "fenceline.writer",
                List.of(
                        "maxPayloadBytes",
                        "connectionRecheckAttempts",
                        "lockTimeout",
                        "idleInTransactionSessionTimeout"),
                Map.of());

        /** Largest audit payload of a WriteDescription, 0 to 8192 bytes. */
        private int maxPayloadBytes = FencedWriterConfig.DB_PAYLOAD_CAP;

        /** Check once per (resource, table) that a WriteDescription's table is protected for the token's resource. */
        private boolean checkProtectedTables = true;

        /** After a lost connection, how many fresh connections to try when re-checking the term, 1 to 10. */
        private int connectionRecheckAttempts = 3;

        public int getMaxPayloadBytes() {
            return maxPayloadBytes;
        }

        public void setMaxPayloadBytes(int maxPayloadBytes) {
            this.maxPayloadBytes = maxPayloadBytes;
        }

        public boolean isCheckProtectedTables() {
            return checkProtectedTables;
        }

        public void setCheckProtectedTables(boolean checkProtectedTables) {
            this.checkProtectedTables = checkProtectedTables;
        }

        public int getConnectionRecheckAttempts() {
            return connectionRecheckAttempts;
        }

        public void setConnectionRecheckAttempts(int connectionRecheckAttempts) {
            this.connectionRecheckAttempts = connectionRecheckAttempts;
        }
    }

    /**
     * {@code fenceline.datasource.*}: a pool of Fenceline's own for the fenced writer and the fencing migrations.
     * Unset {@code url}: the application's DataSource is used.
     */
    public static class Datasource extends SessionTimeouts {
        static final PropertyNames PROPERTIES = PropertyNames.of(
                "fenceline.datasource",
                List.of(
                        "username",
                        "maximumPoolSize",
                        "minimumIdle",
                        "connectionTimeout",
                        "lockTimeout",
                        "idleInTransactionSessionTimeout",
                        "statementTimeout",
                        "applicationName",
                        "poolName"),
                Map.of("jdbcUrl", "url"));

        /** JDBC URL (jdbc:postgresql:...) of Fenceline's own pool; unset: the application's DataSource is used. */
        private String url;

        /** PostgreSQL role of Fenceline's own pool. */
        private String username;

        /** Password of that role. */
        private String password;

        /** Pool size, 1 to 1000. */
        private int maximumPoolSize = 10;

        /** Idle connections kept; defaults to maximum-pool-size (a fixed-size pool). */
        private Integer minimumIdle;

        /** How long to wait for a connection from the pool, 250ms to 5min. */
        private Duration connectionTimeout = Duration.ofSeconds(5);

        /** statement_timeout of every session, 0 (off) to 1h. */
        private Duration statementTimeout = Duration.ZERO;

        /** application_name, shown in pg_stat_activity and in the rejection audit. */
        private String applicationName = "fenceline";

        /** HikariCP pool name. */
        private String poolName = "fenceline";

        public String getUrl() {
            return url;
        }

        public void setUrl(String url) {
            this.url = url;
        }

        public String getUsername() {
            return username;
        }

        public void setUsername(String username) {
            this.username = username;
        }

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }

        public int getMaximumPoolSize() {
            return maximumPoolSize;
        }

        public void setMaximumPoolSize(int maximumPoolSize) {
            this.maximumPoolSize = maximumPoolSize;
        }

        public Integer getMinimumIdle() {
            return minimumIdle;
        }

        public void setMinimumIdle(Integer minimumIdle) {
            this.minimumIdle = minimumIdle;
        }

        public Duration getConnectionTimeout() {
            return connectionTimeout;
        }

        public void setConnectionTimeout(Duration connectionTimeout) {
            this.connectionTimeout = connectionTimeout;
        }

        public Duration getStatementTimeout() {
            return statementTimeout;
        }

        public void setStatementTimeout(Duration statementTimeout) {
            this.statementTimeout = statementTimeout;
        }

        public String getApplicationName() {
            return applicationName;
        }

        public void setApplicationName(String applicationName) {
            this.applicationName = applicationName;
        }

        public String getPoolName() {
            return poolName;
        }

        public void setPoolName(String poolName) {
            this.poolName = poolName;
        }
    }

    /** {@code fenceline.task.*}: settings of every fenced task ({@link FencedLeaderTask}, TaskWork beans). */
    public static class Task {
        static final PropertyNames PROPERTIES = PropertyNames.of(
                "fenceline.task",
                List.of("interval", "idleInterval", "failureBackoff", "handoverTimeout", "startRetryInterval"),
                Map.of());

        /** Pause after a run that did work, 0 to 1h (0: drain a backlog at once). */
        private Duration interval = Duration.ZERO;

        /** Pause after a run that found nothing to do, 0 to 1h. */
        private Duration idleInterval = Duration.ofSeconds(1);

        /** Pause after a failed run or one whose commit outcome is unknown, 0 to 1h. */
        private Duration failureBackoff = Duration.ofSeconds(5);

        /** How long closing the context lets the current run finish before interrupting it, 0 to 1h. */
        private Duration handoverTimeout = Duration.ofSeconds(30);

        /** Pause between attempts to reach etcd or PostgreSQL while a task starts, 10ms to 1h. */
        private Duration startRetryInterval = Duration.ofSeconds(1);

        /** Warm the writer up (connections, statements) before campaigning, so the first run after winning is not cold. */
        private boolean warmUp = true;

        public Duration getInterval() {
            return interval;
        }

        public void setInterval(Duration interval) {
            this.interval = interval;
        }

        public Duration getIdleInterval() {
            return idleInterval;
        }

        public void setIdleInterval(Duration idleInterval) {
            this.idleInterval = idleInterval;
        }

        public Duration getFailureBackoff() {
            return failureBackoff;
        }

        public void setFailureBackoff(Duration failureBackoff) {
            this.failureBackoff = failureBackoff;
        }

        public Duration getHandoverTimeout() {
            return handoverTimeout;
        }

        public void setHandoverTimeout(Duration handoverTimeout) {
            this.handoverTimeout = handoverTimeout;
        }

        public Duration getStartRetryInterval() {
            return startRetryInterval;
        }

        public void setStartRetryInterval(Duration startRetryInterval) {
            this.startRetryInterval = startRetryInterval;
        }

        public boolean isWarmUp() {
            return warmUp;
        }

        public void setWarmUp(boolean warmUp) {
            this.warmUp = warmUp;
        }
    }

    /** {@code fenceline.migrations.*}: the fencing schema. */
    public static class Migrations {
        /**
         * Apply the fencing migrations (schema fencing, history table fencing.fencing_schema_history) at start,
         * before the application's own Flyway migrations.
         */
        private boolean enabled = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }
}
