package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionConfig;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.Response;
import io.etcd.jetcd.Txn;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.lease.LeaseRevokeResponse;
import io.etcd.jetcd.options.GetOption;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The only place that talks to jetcd's KV and Lease clients. Every call carries two deadlines: a gRPC
 * deadline set by {@link DeadlineInterceptor} (so the RPC itself is cancelled; jetcd sets none and its
 * default waitForReady=true would otherwise hang on a paused member for tens of seconds) and
 * {@code orTimeout(callTimeout)} on the future as a belt-and-braces bound. jetcd's own retries are switched
 * off: retrying is the caller's decision, because only the caller knows whether a retry is safe.
 */
final class EtcdGateway implements AutoCloseable {
  private final Client client;
  private final KV kv;
  private final Lease lease;
  private final Duration callTimeout;
  private final ElectionMetrics metrics;
  /** In-flight bound for election reads/transactions (not lease calls). */
  private final AsyncLimiter electionRequests = new AsyncLimiter(64);
  /** Checked against every response header: detects a cluster rebuilt from nothing (see ClusterHistory). */
  private final ClusterHistory history = new ClusterHistory();
  private volatile Consumer<String> historyChanged = change -> { };

  EtcdGateway(ElectionConfig config, ElectionMetrics metrics) {
    this.callTimeout = config.callTimeout();
    this.metrics = metrics;
    this.client = Client.builder()
        .endpoints(config.endpoints().toArray(String[]::new))
        .retryMaxAttempts(0)
        .waitForReady(false)
        .connectTimeout(config.connectTimeout())
        .interceptor(new DeadlineInterceptor(config.callTimeout()))
        .build();
    this.kv = client.getKVClient();
    this.lease = client.getLeaseClient();
  }

  Client client() {
    return client;
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

  /** Linearizable range read of every key under {@code prefix}. */
  CompletableFuture<GetResponse> getPrefix(String prefix) {
    return electionRequests.submit(
        () -> bounded("get", true, () -> kv.get(bytes(prefix), GetOption.builder().isPrefix(true).build())));
  }

  /** Linearizable read of one key. */
  CompletableFuture<GetResponse> get(String key) {
    return bounded("get", true, () -> kv.get(bytes(key)));
  }

  /** Builds and commits a transaction; {@code build} fills in If/Then/Else. */
  CompletableFuture<TxnResponse> txn(Function<Txn, Txn> build) {
    return electionRequests.submit(() -> bounded("txn", true, () -> build.apply(kv.txn()).commit()));
  }

  CompletableFuture<LeaseGrantResponse> grant(long ttlSeconds) {
    return bounded("lease_grant", true, () -> lease.grant(ttlSeconds));
  }

  /** One renewal on its own short-lived gRPC stream: the response answers exactly this request. */
  CompletableFuture<LeaseKeepAliveResponse> keepAliveOnce(long leaseId) {
    // not linearizable: the header comes from the etcd leader's local state, which may lag its commits
    return bounded("lease_keepalive", false, () -> lease.keepAliveOnce(leaseId));
  }

  CompletableFuture<LeaseRevokeResponse> revoke(long leaseId) {
    return bounded("lease_revoke", true, () -> lease.revoke(leaseId));
  }

  /** @param linearizable whether the response header is at least every revision committed before sending */
  private <T extends Response> CompletableFuture<T> bounded(String op, boolean linearizable,
      java.util.function.Supplier<CompletableFuture<T>> call) {
    metrics.request(op);
    ClusterHistory.Mark sent = history.mark(); // before sending: the floor a same-history answer cannot be below
    CompletableFuture<T> f;
    try {
      f = call.get();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    // thenApply: the check runs before any caller sees the response
    return f.thenApply(r -> {
      observe(sent, r.getHeader(), linearizable);
      return r;
    }).orTimeout(callTimeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(50), TimeUnit.NANOSECONDS);
  }

  @Override
  public void close() {
    client.close();
  }

  /** Sets a gRPC deadline on every call except the long-lived Watch stream. */
  static final class DeadlineInterceptor implements ClientInterceptor {
    private final long timeoutNanos;

    DeadlineInterceptor(Duration timeout) {
      this.timeoutNanos = timeout.toNanos();
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
      // Lease/LeaseKeepAlive is a stream too, but we only use it through keepAliveOnce (one request, one
      // response), so it gets the deadline like any unary call.
      boolean longLived = method.getFullMethodName().endsWith("Watch/Watch");
      if (!longLived && options.getDeadline() == null) {
        options = options.withDeadlineAfter(timeoutNanos, TimeUnit.NANOSECONDS);
      }
      return next.newCall(method, options);
    }
  }
}
