package dev.fenceline.election.internal;

import static dev.fenceline.election.internal.EtcdGateway.bytes;

import dev.fenceline.election.ElectionConfig;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.handler.ssl.SslContext;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Opens the two connections to one etcd member, the jetcd client and the raw gRPC channel for lease renewals,
 * with the same deadline, keepalive, TLS and credentials.
 *
 * <p>Every call carries a gRPC deadline set by {@link DeadlineInterceptor} (so the RPC itself is cancelled;
 * jetcd sets none and waitForReady=true would hang on a paused member). jetcd's own retries are off: only the
 * caller knows whether a retry is safe.
 *
 * <p><b>gRPC keepalive</b> is set explicitly ({@link #GRPC_KEEPALIVE_TIME}, timeout = callTimeout, only
 * while a call is active, which etcd's default enforcement policy requires): jetcd's defaults (30 s + 10 s)
 * left a watch on a hung member unnoticed for ~38 s. It is not what bounds failover: followers re-read every
 * renew interval and the watch is checked by progress requests (see DefaultElectionSession).
 */
final class EtcdChannels {
    /** grpc-java raises anything below 10 s to 10 s; etcd's default enforcement minimum is 5 s. */
    static final Duration GRPC_KEEPALIVE_TIME = Duration.ofSeconds(10);

    private EtcdChannels() {}

    /** @param ssl the client TLS context, or null for plain http */
    static Client jetcdClient(String uri, ElectionConfig config, @Nullable SslContext ssl) {
        ClientBuilder builder = Client.builder()
                .endpoints(uri)
                .retryMaxAttempts(0)
                .waitForReady(false)
                .connectTimeout(config.connectTimeout())
                .keepaliveTime(GRPC_KEEPALIVE_TIME)
                .keepaliveTimeout(config.callTimeout())
                .keepaliveWithoutCalls(false)
                .interceptor(new DeadlineInterceptor(config.callTimeout()));
        if (ssl != null) {
            builder.sslContext(ssl);
        }
        String user = config.username();
        String password = config.password();
        if (user != null && password != null) { // set together or neither (checked when the configuration was built)
            builder.user(bytes(user)).password(bytes(password));
        }
        return builder.build();
    }

    /**
     * The channel for {@link LeaseKeepAliveCall}; its calls set their own deadline.
     *
     * @param ssl the client TLS context, or null for plain http
     */
    static ManagedChannel rawChannel(String uri, ElectionConfig config, @Nullable SslContext ssl) {
        URI u = URI.create(uri);
        NettyChannelBuilder rawBuilder = NettyChannelBuilder.forAddress(u.getHost(), u.getPort());
        if (ssl != null) {
            rawBuilder.sslContext(ssl);
        } else {
            rawBuilder.usePlaintext();
        }
        return rawBuilder
                .keepAliveTime(GRPC_KEEPALIVE_TIME.toNanos(), TimeUnit.NANOSECONDS)
                .keepAliveTimeout(config.callTimeout().toNanos(), TimeUnit.NANOSECONDS)
                .keepAliveWithoutCalls(false)
                .build();
    }

    /** Sets a gRPC deadline on every call except the long-lived Watch stream. */
    static final class DeadlineInterceptor implements ClientInterceptor {
        private final long timeoutNanos;

        DeadlineInterceptor(Duration timeout) {
            this.timeoutNanos = timeout.toNanos();
        }

        @Override
        public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
            boolean longLived = method.getFullMethodName().endsWith("Watch/Watch");
            if (!longLived && options.getDeadline() == null) {
                options = options.withDeadlineAfter(timeoutNanos, TimeUnit.NANOSECONDS);
            }
            return next.newCall(method, options);
        }
    }
}
