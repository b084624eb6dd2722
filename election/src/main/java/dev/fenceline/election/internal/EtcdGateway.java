package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionConfig;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.Response;
import io.etcd.jetcd.Txn;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.api.LeaseGrpc;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.lease.LeaseRevokeResponse;
import io.etcd.jetcd.maintenance.StatusResponse;
import io.etcd.jetcd.options.GetOption;
import io.grpc.ManagedChannel;
import io.netty.handler.ssl.SslContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The only place that talks to etcd: routes each call to a member, fails an idempotent call over to the next
 * one, and checks and counts every response. One jetcd client per endpoint (not one round-robin client), so
 * every call knows which member it went to: a failure is tagged with that member, an idempotent call is retried
 * at once on the next member, and a member that failed stops being preferred. With one member stopped, a
 * round-robin client sent every third call into it; here at most the first call after it stopped does.
 *
 * <p>Every call carries two deadlines: a gRPC deadline on the RPC itself (see {@link EtcdChannels}) and
 * {@code orTimeout(callTimeout)} on the future. jetcd's own retries are off: only the caller knows whether
 * a retry is safe. Lease renewals go through {@link LeaseKeepAliveCall}, one request per stream.
 */
final class EtcdGateway implements AutoCloseable {
    /** One etcd member as seen by this client. */
    static final class Endpoint implements AutoCloseable {
        final int index;
        final String uri;
        final Client client;
        final KV kv;
        final Lease lease;
        private final ManagedChannel raw;
        private final LeaseGrpc.LeaseStub rawLease;

        Endpoint(int index, String uri, ElectionConfig config, @Nullable SslContext ssl) {
            this.index = index;
            this.uri = uri;
            this.client = EtcdChannels.jetcdClient(uri, config, ssl);
            this.kv = client.getKVClient();
            this.lease = client.getLeaseClient();
            this.raw = EtcdChannels.rawChannel(uri, config, ssl);
            this.rawLease = LeaseGrpc.newStub(raw);
        }

        @Override
        public String toString() {
            return uri;
        }

        @Override
        public void close() {
            try {
                client.close();
            } finally {
                raw.shutdownNow();
            }
        }
    }

    private final List<Endpoint> endpoints;
    private final Duration callTimeout;
    private final ElectionMetrics metrics;
    /** The member election requests go to first; moves on when a call there fails. */
    private final AtomicInteger preferred = new AtomicInteger();
    /** In-flight bound for election reads/transactions (not lease calls). */
    private final AsyncLimiter electionRequests = new AsyncLimiter(64);
    /** Checked against every response header: detects a cluster rebuilt from nothing (see ClusterHistory). */
    private final ClusterHistory history = new ClusterHistory();

    private volatile Consumer<String> historyChanged = change -> {};

    EtcdGateway(ElectionConfig config, ElectionMetrics metrics) {
        this.callTimeout = config.callTimeout();
        this.metrics = metrics;
        List<Endpoint> list = new ArrayList<>();
        SslContext ssl = EtcdTls.sslContext(config);
        try {
            for (String uri : config.endpoints()) {
                list.add(new Endpoint(list.size(), uri.trim(), config, ssl));
            }
        } catch (RuntimeException e) {
            list.forEach(Endpoint::close);
            throw e;
        }
        this.endpoints = List.copyOf(list);
    }

    int endpointCount() {
        return endpoints.size();
    }

    Endpoint endpoint(int index) {
        return endpoints.get(Math.floorMod(index, endpoints.size()));
    }

    /** The member election requests currently go to first. */
    int preferredEndpoint() {
        return preferred.get();
    }

    /** A call to {@code index} failed: prefer the next member, unless someone already moved on. */
    void demote(int index) {
        int n = endpoints.size();
        preferred.compareAndSet(index, (index + 1) % n);
    }

    Watch watchClient(int index) {
        return endpoint(index).client.getWatchClient();
    }

    ClusterHistory history() {
        return history;
    }

    /** Called (on the responding thread, so it must only hand work off) when a header proves a new history. */
    void onHistoryChange(Consumer<String> listener) {
        this.historyChanged = listener;
    }

    /** Checks one response header (also used for watch responses, which do not pass through here). */
    void observe(ClusterHistory.Mark sent, Response.Header header, boolean linearizable) {
        String change = history.observe(sent, header.getClusterId(), header.getRevision(), linearizable);
        if (change != null) {
            historyChanged.accept(change);
        }
    }

    Duration callTimeout() {
        return callTimeout;
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    static String string(ByteSequence b) {
        return b.toString(StandardCharsets.UTF_8);
    }

    /** Linearizable range read of every key under {@code prefix}; retried once on the next member. */
    CompletableFuture<GetResponse> getPrefix(String prefix) {
        return electionRequests.submit(() -> withFailover(
                "get",
                true,
                e -> e.kv.get(bytes(prefix), GetOption.builder().isPrefix(true).build())));
    }

    /** Linearizable read of one key; retried once on the next member. */
    CompletableFuture<GetResponse> get(String key) {
        return withFailover("get", true, e -> e.kv.get(bytes(key)));
    }

    /**
     * Builds and commits a transaction; {@code build} fills in If/Then/Else. Never retried here: a failure
     * may have committed (the caller resolves it by reading); the next call goes to the next member.
     */
    CompletableFuture<TxnResponse> txn(Function<Txn, Txn> build) {
        return electionRequests.submit(() -> {
            Endpoint e = endpoint(preferred.get());
            return onEndpoint(e, "txn", true, () -> build.apply(e.kv.txn()).commit());
        });
    }

    /** A grant that fails leaks at most one unused lease, which expires after its TTL: retried once. */
    CompletableFuture<LeaseGrantResponse> grant(long ttlSeconds) {
        return withFailover("lease_grant", true, e -> e.lease.grant(ttlSeconds));
    }

    CompletableFuture<LeaseRevokeResponse> revoke(long leaseId) {
        return withFailover("lease_revoke", true, e -> e.lease.revoke(leaseId));
    }

    /** The server version of one member (maintenance status). */
    CompletableFuture<StatusResponse> status(int index) {
        Endpoint e = endpoint(index);
        return onEndpoint(
                e, "status", false, () -> e.client.getMaintenanceClient().statusMember(e.uri));
    }

    /**
     * Exactly one LeaseKeepAlive request to member {@code index} on its own stream, then half-close. The
     * response answers exactly this request, so the caller knows the send time a positive TTL confirms.
     */
    CompletableFuture<LeaseKeepAliveResponse> keepAliveOnce(long leaseId, int index) {
        Endpoint e = endpoint(index);
        // not linearizable: the header comes from the etcd leader's local state, which may lag its commits
        return onEndpoint(
                e, "lease_keepalive", false, () -> LeaseKeepAliveCall.send(e.rawLease, e.uri, leaseId, callTimeout));
    }

    /** Tries the preferred member, then (on a failure that is not a definite rejection) the next one once. */
    private <T extends Response> CompletableFuture<T> withFailover(
            String op, boolean linearizable, Function<Endpoint, CompletableFuture<T>> call) {
        Endpoint first = endpoint(preferred.get());
        return onEndpoint(first, op, linearizable, () -> call.apply(first))
                .handle((r, err) -> {
                    if (err == null) {
                        return CompletableFuture.completedFuture(r);
                    }
                    if (EtcdFailure.isDefinite(err) || endpoints.size() == 1) {
                        return CompletableFuture.<T>failedFuture(err);
                    }
                    Endpoint next = endpoint(first.index + 1);
                    return onEndpoint(next, op, linearizable, () -> call.apply(next));
                })
                .thenCompose(Function.identity());
    }

    /** @param linearizable whether the response header is at least every revision committed before sending */
    private <T extends Response> CompletableFuture<T> onEndpoint(
            Endpoint e, String op, boolean linearizable, Supplier<CompletableFuture<T>> call) {
        metrics.request(op);
        ClusterHistory.Mark sent = history.mark(); // before sending: the floor a same-history answer cannot be below
        CompletableFuture<T> f;
        try {
            f = call.get();
        } catch (RuntimeException ex) {
            f = CompletableFuture.failedFuture(ex);
        }
        // thenApply: the check runs before any caller sees the response
        return f.thenApply(r -> {
                    observe(sent, r.getHeader(), linearizable);
                    return r;
                })
                .orTimeout(callTimeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(50), TimeUnit.NANOSECONDS)
                .whenComplete((r, err) -> {
                    if (err != null && !EtcdFailure.isDefinite(err)) {
                        metrics.endpointFailure(op, e.uri);
                        demote(e.index);
                    }
                });
    }

    @Override
    public void close() {
        endpoints.forEach(Endpoint::close);
    }
}
