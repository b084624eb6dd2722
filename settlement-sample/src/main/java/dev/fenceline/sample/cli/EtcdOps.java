package dev.fenceline.sample.cli;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionConfig;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.options.LeaseOption;
import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.ssl.SslContextBuilder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** etcd access for the operator commands (status, resign, pause, resume). */
final class EtcdOps {
    private EtcdOps() {}

    static ElectionAdmin admin(CommonOptions common) {
        return ElectionAdmin.connect(common.electionConfig());
    }

    /** Seconds left on a lease as etcd sees it (-1 if the lease is gone), or null when it cannot be asked. */
    static Long leaseTtlLeftMillis(ElectionConfig cfg, long leaseId) {
        ClientBuilder b = Client.builder()
                .endpoints(cfg.endpoints().toArray(new String[0]))
                .connectTimeout(Duration.ofSeconds(3));
        try {
            if (cfg.tls()) {
                SslContextBuilder ssl =
                        GrpcSslContexts.forClient().trustManager(cfg.tlsCaFile().toFile());
                if (cfg.tlsClientCertFile() != null) {
                    ssl.keyManager(
                            cfg.tlsClientCertFile().toFile(),
                            cfg.tlsClientKeyFile().toFile());
                }
                b.sslContext(ssl.build());
            }
            if (cfg.username() != null) {
                b.user(ByteSequence.from(cfg.username(), StandardCharsets.UTF_8))
                        .password(ByteSequence.from(cfg.password(), StandardCharsets.UTF_8));
            }
        } catch (Exception e) {
            return null;
        }
        try (Client c = b.build()) {
            LeaseTimeToLiveResponse r =
                    c.getLeaseClient().timeToLive(leaseId, LeaseOption.DEFAULT).get(3, TimeUnit.SECONDS);
            return r.getTTL() < 0 ? -1L : r.getTTL() * 1000L;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } catch (Exception e) {
            return null;
        }
    }
}
