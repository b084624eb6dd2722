package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionException;
import dev.fenceline.election.ElectionKeys;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeaderElection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Session = one jetcd client + one {@link LeaseKeeper} + one {@link PrefixWatch} over {@code keyPrefix}, shared by
 * all of its elections; this class opens them in order, hands them to the elections, and closes them in order.
 * The parts: {@link SessionThreads} (its threads), {@link SessionElections} (its elections by name, which hear
 * the lease news), {@link LivenessChecks} (re-reads and watch progress every renew interval),
 * {@link OpenChecks} (permissions and server versions at open), {@link Dependents} (closed first) and
 * {@link SessionShutdownHook}.
 *
 * <p>Closing order: dependents, then every election (each term stops being valid first), then the lease revoke,
 * then the liveness checks, the watch, the threads and the client.
 */
public final class DefaultElectionSession implements ElectionSession {
    private static final Logger log = LoggerFactory.getLogger(DefaultElectionSession.class);

    private final ElectionConfig config;
    private final ElectionMetrics metrics;
    private final EtcdGateway etcd;
    private final ElectionStore store;
    private final SessionThreads threads;
    private final SessionElections elections = new SessionElections();
    private final LeaseKeeper keeper;
    private final PrefixWatch watch;
    private final LivenessChecks liveness;
    private final Dependents dependents = new Dependents();
    private final SessionShutdownHook shutdownHook = new SessionShutdownHook();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Set by {@link #simulateCrash}, before {@code closed}. */
    private volatile boolean crashed;

    private DefaultElectionSession(ElectionConfig config) {
        this.config = config;
        this.metrics = new ElectionMetrics(config.meterRegistry());
        this.etcd = new EtcdGateway(config, metrics);
        this.store = new EtcdElectionStore(etcd);
        this.threads = new SessionThreads();
        this.keeper = new LeaseKeeper(config, etcd, metrics, threads.lease, elections.leaseNews());
        this.watch = new PrefixWatch(
                config,
                etcd,
                metrics,
                threads,
                elections,
                new OrphanedLeaderRecords(etcd, keeper, threads),
                this::stopped);
        this.liveness = new LivenessChecks(config, threads, elections, watch, this::stopped);
        this.etcd.onHistoryChange(watch::onClusterChanged);
    }

    /** See {@link ElectionSession#open}. */
    public static DefaultElectionSession open(ElectionConfig config) {
        if (config == null) {
            throw new ElectionException("config must not be null");
        }
        DefaultElectionSession s = new DefaultElectionSession(config);
        try {
            ClusterHistory.Mark before = s.etcd.history().mark();
            long revision = s.keeper.grantInitial(config.connectTimeout());
            s.etcd.history().advance(before, revision);
            OpenChecks.checkPermissions(config, s.etcd);
            s.watch.start();
            s.liveness.start();
            OpenChecks.checkServerVersions(config, s.etcd, s.metrics);
        } catch (RuntimeException e) {
            s.shutdownQuietly();
            throw e;
        }
        if (config.closeOnShutdown()) {
            s.shutdownHook.register(s::closeFromHook);
        }
        log.info(
                "election session open: lease={} endpoints={} ttl_ms={} renew_ms={} margin_ms={} call_timeout_ms={}",
                s.leaseId(),
                config.endpoints(),
                config.ttl().toMillis(),
                config.renewInterval().toMillis(),
                config.safetyMargin().toMillis(),
                config.callTimeout().toMillis());
        return s;
    }

    @Override
    public LeaderElection election(String electionName, String candidateId) {
        return election(electionName, candidateId, Map.of());
    }

    @Override
    public LeaderElection election(String electionName, String candidateId, Map<String, String> metadata) {
        if (closed.get()) {
            throw new ElectionException("election() called after the session was closed");
        }
        ElectionKeys.requireValidName(electionName, "election name");
        if (candidateId == null || candidateId.isBlank()) {
            throw new ElectionException("candidateId must not be blank");
        }
        return elections.add(
                electionName,
                () -> new DefaultLeaderElection(
                        this, electionName, candidateId, metadata == null ? Map.of() : metadata));
    }

    @Override
    public long leaseId() {
        return keeper.view().leaseId();
    }

    @Override
    public ElectionConfig config() {
        return config;
    }

    /** Total etcd requests this session issued (benchmark). */
    public long etcdRequestCount() {
        return metrics.requestCount();
    }

    /** The lease keeper's deadline on the nanoTime scale (tests, diagnostics). */
    public long leaseValidUntilNanos() {
        return keeper.view().validUntilNanos();
    }

    /** The etcd client URL the prefix watch currently runs on (tests, diagnostics). */
    public String watchEndpoint() {
        return watch.endpointUri();
    }

    /** The revision the prefix watch has seen up to (tests, diagnostics). */
    public long lastSeenRevision() {
        return etcd.history().revision();
    }

    // ------------------------------------------------------------------ for elections

    ElectionMetrics metrics() {
        return metrics;
    }

    EtcdGateway etcd() {
        return etcd;
    }

    ElectionStore store() {
        return store;
    }

    LeaseKeeper keeper() {
        return keeper;
    }

    ScheduledThreadPoolExecutor workPool() {
        return threads.work;
    }

    ExecutorService listenerExecutor() {
        return threads.listeners;
    }

    boolean isCrashed() {
        return crashed;
    }

    @Nullable
    ScheduledFuture<?> schedule(Runnable r, Duration delay) {
        return threads.schedule(r, delay);
    }

    void forget(DefaultLeaderElection e) {
        elections.remove(e);
    }

    /** Closed or crashed: the watch and the liveness checks stop re-creating and re-checking. */
    private boolean stopped() {
        return closed.get() || crashed;
    }

    // ------------------------------------------------------------------ lifecycle

    @Override
    public Runnable closeFirst(AutoCloseable dependent) {
        if (dependent == null) {
            throw new ElectionException("closeFirst(dependent): dependent must not be null");
        }
        if (closed.get()) {
            throw new ElectionException("closeFirst() called after the session was closed");
        }
        return dependents.add(dependent);
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        if (CallbackContext.inside()) {
            // from a callback or a session thread: closing waits for the elections, which may need this thread
            Thread t = new Thread(this::closeNow, "fenceline-session-close");
            t.setDaemon(true);
            t.start();
            log.debug("session close() from a callback: closing on another thread");
            return;
        }
        closeNow();
    }

    private void closeNow() {
        shutdownHook.remove();
        dependents.closeAll();
        closeElectionsAndLease();
    }

    private void closeFromHook() {
        if (closed.compareAndSet(false, true)) {
            log.info(
                    "JVM shutdown: closing {} dependent(s), then resigning all elections and revoking lease={}",
                    dependents.size(),
                    leaseId());
            dependents.closeAll();
            closeElectionsAndLease();
        }
    }

    private void closeElectionsAndLease() {
        List<CompletableFuture<Void>> closing = new ArrayList<>();
        // Every term stops being valid first; the revoke below removes the records. With leaseLossHoldOff on, each
        // record is deleted with its resign marker first, else followers would take the revoke for a lost lease
        // and wait out the hold-off.
        boolean markResigns = !config.leaseLossHoldOff().isZero();
        for (DefaultLeaderElection e : elections.snapshot()) {
            closing.add(e.closeAsync(markResigns));
        }
        try {
            CompletableFuture.allOf(closing.toArray(CompletableFuture[]::new))
                    .get(config.callTimeout().toMillis() * 2 + 500, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            log.warn("not every election stopped in time; revoking the lease anyway");
        }
        long lease = keeper.view().leaseId();
        keeper.close();
        try {
            etcd.revoke(lease).get(config.callTimeout().toMillis() + 100, TimeUnit.MILLISECONDS);
            log.info("election session closed: lease={} revoked", lease);
        } catch (Exception e) {
            log.warn(
                    "election session closed: lease={} not revoked ({}); its leader records expire with it after "
                            + "the TTL",
                    lease,
                    LeaseKeeper.describe(e));
        }
        shutdownQuietly();
    }

    private void shutdownQuietly() {
        liveness.stop();
        watch.close();
        keeper.close();
        threads.shutdown();
        try {
            etcd.close();
        } catch (RuntimeException e) {
            log.debug("closing etcd client", e);
        }
    }

    /**
     * Testing and benchmarks only: behave like a process that froze or died at this instant. No more renewals,
     * transitions, listener calls, deletes or revokes; the client connection is dropped. Every held
     * {@code Leadership} stays as it was, so {@code isValidNow()} turns false by itself when the frozen
     * deadline passes, exactly as in a frozen process. Successors can win only after etcd expires the lease.
     * Package-private: tests reach it through the test-only {@code SessionFaults} in this package's test sources.
     */
    void simulateCrash() {
        crashed = true;
        closed.set(true);
        shutdownHook.remove();
        threads.haltWork();
        watch.close();
        try {
            etcd.close();
        } catch (RuntimeException ignored) {
            // crashing
        }
        threads.haltListeners();
    }
}
