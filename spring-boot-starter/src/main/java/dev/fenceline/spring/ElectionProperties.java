package dev.fenceline.spring;

import dev.fenceline.election.ElectionConfig;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** {@code fenceline.election.*}: the etcd session shared by every election of this application, and its election. */
public class ElectionProperties {
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

    /** The session's configuration, built and checked by {@link ElectionConfig.Builder#build()}. */
    ElectionConfig electionConfig(MeterRegistry meterRegistry) {
        return PROPERTIES.rethrow(() -> {
            ElectionConfig.Builder b = ElectionConfig.builder()
                    .endpoints(endpoints)
                    .keyPrefix(keyPrefix)
                    .ttl(ttl)
                    .renewInterval(renewInterval)
                    .safetyMargin(safetyMargin)
                    .callTimeout(callTimeout)
                    .connectTimeout(connectTimeout)
                    .retryBackoff(retryBackoffMin, retryBackoffMax)
                    .resignHoldOff(resignHoldOff)
                    .tlsCaFile(tlsCaFile)
                    .tlsClientCert(tlsClientCertFile, tlsClientKeyFile)
                    // The application context closes the session (after the tasks that use it); a JVM hook of its
                    // own could close it while those tasks still write.
                    .closeOnShutdown(false);
            if (username != null || password != null) {
                b.credentials(username, password);
            }
            if (meterRegistry != null) {
                b.meterRegistry(meterRegistry);
            }
            return b.build();
        });
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
