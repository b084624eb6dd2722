package dev.fenceline.election;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The TLS files and RBAC credentials of an {@link ElectionConfig}, checked against the endpoints' scheme and each
 * other when the configuration is built; prints itself without the password.
 */
final class EtcdSecurity {
    /** Non-null exactly when the endpoints are https://. */
    final @Nullable Path tlsCaFile;
    /** Set together with {@code tlsClientKeyFile}, or neither. */
    final @Nullable Path tlsClientCertFile;

    final @Nullable Path tlsClientKeyFile;
    /** Set together with {@code password}, or neither; never blank. */
    final @Nullable String username;

    final @Nullable String password;

    private EtcdSecurity(
            @Nullable Path tlsCaFile,
            @Nullable Path tlsClientCertFile,
            @Nullable Path tlsClientKeyFile,
            @Nullable String username,
            @Nullable String password) {
        this.tlsCaFile = tlsCaFile;
        this.tlsClientCertFile = tlsClientCertFile;
        this.tlsClientKeyFile = tlsClientKeyFile;
        this.username = username;
        this.password = password;
    }

    /**
     * Checks the settings against {@code endpoints} (already with their scheme) and each other.
     *
     * @throws ElectionException naming the property and the value that does not fit
     */
    static EtcdSecurity checked(
            List<String> endpoints,
            @Nullable Path tlsCaFile,
            @Nullable Path tlsClientCertFile,
            @Nullable Path tlsClientKeyFile,
            @Nullable String username,
            @Nullable String password) {
        long https =
                endpoints.stream().filter(e -> e.trim().startsWith("https://")).count();
        if (https != 0 && https != endpoints.size()) {
            throw new ElectionException("endpoints must be all http:// or all https:// but were " + endpoints);
        }
        if (https > 0 && tlsCaFile == null) {
            throw new ElectionException("tlsCaFile must be set for https:// endpoints (the PEM CA bundle that signed "
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
        requireReadable("tlsCaFile", tlsCaFile);
        requireReadable("tlsClientCert certificate", tlsClientCertFile);
        requireReadable("tlsClientCert key", tlsClientKeyFile);
        if ((username == null) != (password == null) || (username != null && username.isBlank())) {
            throw new ElectionException("credentials need a non-blank username and a password but got username="
                    + (username == null ? "null" : "'" + username + "'") + " password="
                    + (password == null ? "null" : "***"));
        }
        return new EtcdSecurity(tlsCaFile, tlsClientCertFile, tlsClientKeyFile, username, password);
    }

    private static void requireReadable(String what, @Nullable Path file) {
        if (file != null && !Files.isReadable(file)) {
            throw new ElectionException(what + " must be a readable PEM file but '" + file + "' is not readable");
        }
    }

    /** The part of {@link ElectionConfig#toString()} for the settings that are set; the password as {@code ***}. */
    @Override
    public String toString() {
        return (tlsCaFile != null ? ", tlsCaFile=" + tlsCaFile : "")
                + (tlsClientCertFile != null
                        ? ", tlsClientCertFile=" + tlsClientCertFile + ", tlsClientKeyFile=" + tlsClientKeyFile
                        : "")
                + (username != null ? ", username=" + username + ", password=***" : "");
    }
}
