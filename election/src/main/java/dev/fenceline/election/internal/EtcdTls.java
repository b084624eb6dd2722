package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionException;
import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Instant;
import javax.net.ssl.SSLException;
import org.jspecify.annotations.Nullable;

/**
 * Builds the client TLS context for etcd from the configured PEM files, refusing at once a client certificate
 * outside its validity (etcd would refuse it with a bare handshake alert).
 */
final class EtcdTls {
    private EtcdTls() {}

    /** The client TLS context (CA bundle, optional client certificate), or null for plain http. */
    static @Nullable SslContext sslContext(ElectionConfig config) {
        Path caFile = config.tlsCaFile(); // set exactly when config.tls()
        if (caFile == null) {
            return null;
        }
        // set together or neither (checked when the configuration was built)
        Path certFile = config.tlsClientCertFile();
        Path keyFile = config.tlsClientKeyFile();
        if (certFile != null) {
            checkValidity(certFile, Instant.now());
        }
        try {
            SslContextBuilder b = GrpcSslContexts.forClient().trustManager(caFile.toFile());
            if (certFile != null && keyFile != null) {
                b.keyManager(certFile.toFile(), keyFile.toFile());
            }
            return b.build();
        } catch (SSLException | IllegalArgumentException e) {
            throw new ElectionException(
                    "cannot build the etcd TLS context from tlsCaFile="
                            + config.tlsCaFile()
                            + (config.tlsClientCertFile() != null
                                    ? ", tlsClientCert=" + config.tlsClientCertFile() + " / "
                                            + config.tlsClientKeyFile()
                                    : "")
                            + ": " + e.getMessage()
                            + " (PEM files expected; the client key in PKCS#8)",
                    e);
        }
    }

    /**
     * An expired (or not yet valid) client certificate is refused by etcd's TLS handshake with a bare alert that
     * jetcd reports as "UNAVAILABLE" after connectTimeout; say so at once, naming the file and the dates. Reads
     * the wall clock, as the server's check does.
     */
    static void checkValidity(Path certFile, Instant now) {
        X509Certificate cert;
        try (InputStream in = Files.newInputStream(certFile)) {
            cert = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
        } catch (IOException | CertificateException | ClassCastException e) {
            throw new ElectionException(
                    "tlsClientCert certificate '" + certFile + "' is not a PEM X.509 certificate: " + e.getMessage(),
                    e);
        }
        Instant from = cert.getNotBefore().toInstant();
        Instant until = cert.getNotAfter().toInstant();
        if (now.isAfter(until)) {
            throw new ElectionException("tlsClientCert certificate '" + certFile + "' expired at " + until + " (valid "
                    + from + " .. " + until + ", now " + now + "): etcd refuses it; renew it");
        }
        if (now.isBefore(from)) {
            throw new ElectionException("tlsClientCert certificate '" + certFile + "' is not valid before " + from
                    + " (now " + now + "): check this host's clock or the certificate");
        }
    }
}
