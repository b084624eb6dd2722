package dev.fenceline.election.internal;

import static dev.fenceline.election.internal.EtcdGateway.bytes;
import static dev.fenceline.election.internal.EtcdGateway.string;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionException;
import dev.fenceline.election.ElectionKeys;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeaderElection;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Session = one jetcd client + one {@link LeaseKeeper} + one prefix watch over {@code keyPrefix}, shared by
 * all of its elections. Watch events are only triggers: they are routed to the election they concern, which
 * re-reads and decides. When the watch fails it is re-created from the last seen revision and every election
 * re-reads, so a missed event costs one read, never correctness.
 *
 * <p>Threads: {@code fenceline-lease-*} (1, lease keeper only), {@code fenceline-election-*} (2, all election
 * state machines via per-election serial executors, plus timers), {@code fenceline-listeners-*} (1, default
 * listener executor).
 */
public final class DefaultElectionSession implements ElectionSession {
    private static final Logger log = LoggerFactory.getLogger(DefaultElectionSession.class);
    private static final AtomicInteger SEQ = new AtomicInteger();

    private final ElectionConfig config;
    private final ElectionMetrics metrics;
    private final EtcdGateway etcd;
    private final ElectionStore store;
    private final ScheduledExecutorService leaseThread;
    private final ScheduledThreadPoolExecutor workPool;
    private final ExecutorService listenerThread;
    private final LeaseKeeper keeper;
    private final ConcurrentMap<String, DefaultLeaderElection> elections = new ConcurrentHashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** {@link #closeFirst}: closed before the elections, newest first. */
    private final java.util.Deque<AutoCloseable> dependents = new java.util.concurrent.ConcurrentLinkedDeque<>();

    private volatile boolean crashed;
    private final Object watchLock = new Object();
    private Watch.Watcher watcher;
    private long watchGeneration;
    private volatile boolean watchDelivering;
    private final Backoff watchBackoff;
    /** The member the prefix watch runs on; moves to the next member whenever the watch is re-created. */
    private volatile int watchEndpoint;
    /** nanoTime of the last watch response of any kind (events, progress, created). */
    private volatile long lastWatchResponseNanos;
    /** nanoTime of the oldest progress request not yet followed by a response; 0 = none outstanding. */
    private volatile long progressRequestedNanos;

    private ScheduledFuture<?> livenessTask;
    private Thread shutdownHook;

    private DefaultElectionSession(ElectionConfig config) {
        this.config = config;
        int n = SEQ.incrementAndGet();
        this.metrics = new ElectionMetrics(config.meterRegistry());
        this.etcd = new EtcdGateway(config, metrics);
        this.store = new EtcdElectionStore(etcd);
        this.leaseThread = Executors.newSingleThreadScheduledExecutor(daemon("fenceline-lease-" + n));
        this.workPool = new ScheduledThreadPoolExecutor(2, daemon("fenceline-election-" + n));
        this.workPool.setRemoveOnCancelPolicy(true);
        this.listenerThread = Executors.newSingleThreadExecutor(daemon("fenceline-listeners-" + n));
        this.keeper = new LeaseKeeper(config, etcd, metrics, leaseThread, new LeaseNews());
        this.watchBackoff = new Backoff(config.retryBackoffMin(), config.retryBackoffMax());
        this.etcd.onHistoryChange(this::onClusterChanged);
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
            s.checkPermissions();
            s.startWatch();
            s.startLivenessChecks();
            s.checkServerVersions();
        } catch (RuntimeException e) {
            s.shutdownQuietly();
            throw e;
        }
        if (config.closeOnShutdown()) {
            s.shutdownHook = new Thread(s::closeFromHook, "fenceline-election-shutdown");
            Runtime.getRuntime().addShutdownHook(s.shutdownHook);
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
        DefaultLeaderElection[] created = new DefaultLeaderElection[1];
        elections.compute(electionName, (k, existing) -> {
            if (existing != null) {
                throw new ElectionException("election '" + electionName + "' already has a handle in this session");
            }
            created[0] =
                    new DefaultLeaderElection(this, electionName, candidateId, metadata == null ? Map.of() : metadata);
            return created[0];
        });
        return created[0];
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
        return etcd.endpoint(watchEndpoint).uri;
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
        return workPool;
    }

    ExecutorService listenerExecutor() {
        return listenerThread;
    }

    boolean isCrashed() {
        return crashed;
    }

    ScheduledFuture<?> schedule(Runnable r, Duration delay) {
        try {
            return workPool.schedule(r, Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            return null;
        }
    }

    void forget(DefaultLeaderElection e) {
        elections.remove(e.electionName(), e);
    }

    // ------------------------------------------------------------------ lease keeper callbacks

    /** The keeper's news, fanned out to the elections; a private class so none of it is callable from outside. */
    private final class LeaseNews implements LeaseKeeper.Listener {
        @Override
        public void leaseSuspect(long leaseId, String reason) {
            elections.values().forEach(e -> e.onLeaseSuspect(leaseId, reason));
        }

        @Override
        public void leaseConfirmed(long leaseId) {
            elections.values().forEach(e -> e.onLeaseConfirmed(leaseId));
        }

        @Override
        public void leaseGone(long leaseId, String reason) {
            elections.values().forEach(e -> e.onLeaseGone(leaseId, reason));
        }

        @Override
        public void leaseGranted(long leaseId) {
            elections.values().forEach(DefaultLeaderElection::poke);
        }
    }

    // ------------------------------------------------------------------ watch

    /*
     * Lock discipline: jetcd invokes our watch callbacks while holding its own internal lock, so callbacks
     * never take watchLock; they only read volatile/atomic fields or hand work to workPool. And we never call
     * into jetcd (watch(), close()) while holding watchLock.
     */
    private void startWatch() {
        if (closed.get() || crashed) {
            return;
        }
        long generation;
        synchronized (watchLock) {
            generation = ++watchGeneration;
        }
        ClusterHistory.Mark from = etcd.history().mark();
        WatchOption opt = WatchOption.builder()
                .isPrefix(true)
                .withRevision(from.revision() + 1)
                .withRequireLeader(true) // a member cut off from the quorum cancels the watch instead of going silent
                .build();
        progressRequestedNanos = 0;
        lastWatchResponseNanos = System.nanoTime();
        Watch.Watcher w = etcd.watchClient(watchEndpoint)
                .watch(
                        bytes(config.keyPrefix()),
                        opt,
                        Watch.listener(
                                r -> onWatchResponse(from, r),
                                t -> onWatchError(generation, t),
                                () -> onWatchError(generation, null)));
        boolean current;
        Watch.Watcher previous = null;
        synchronized (watchLock) {
            current = generation == watchGeneration && !closed.get();
            if (current) {
                previous = watcher; // a concurrent restart (error path and cluster change) must not leak a watcher
                watcher = w;
            }
        }
        if (!current) {
            w.close();
        }
        if (previous != null) {
            previous.close();
        }
    }

    private void onWatchResponse(ClusterHistory.Mark from, WatchResponse r) {
        // Watch headers may lag (a member's local state), so only their cluster id is checked.
        etcd.observe(from, r.getHeader(), false);
        lastWatchResponseNanos = System.nanoTime();
        progressRequestedNanos = 0;
        if (!r.getEvents().isEmpty()) {
            watchDelivering = true;
        }
        for (WatchEvent ev : r.getEvents()) {
            etcd.history().advance(from, ev.getKeyValue().getModRevision()); // ignored if the history changed since
            String key = string(ev.getKeyValue().getKey());
            if (!key.startsWith(config.keyPrefix())) {
                continue;
            }
            String rest = key.substring(config.keyPrefix().length());
            int slash = rest.indexOf('/');
            if (slash <= 0) {
                continue;
            }
            String name = rest.substring(0, slash);
            DefaultLeaderElection e = elections.get(name);
            if (e != null) {
                e.onWatchEvent(ev);
            } else if (ev.getEventType() == WatchEvent.EventType.PUT
                    && rest.equals(name + "/leader")
                    && ev.getKeyValue().getLease() != 0
                    && ev.getKeyValue().getLease() == keeper.view().leaseId()) {
                io.etcd.jetcd.KeyValue orphan = ev.getKeyValue();
                try {
                    workPool.execute(() -> deleteOrphan(name, orphan)); // leave jetcd's watch lock first
                } catch (java.util.concurrent.RejectedExecutionException ignored) {
                    // closing: the lease revoke removes it
                }
            }
        }
    }

    /**
     * A leader record on our lease for an election this session has no handle for: a campaign of a closed
     * election whose outcome was unknown committed late. Nobody could use it, and it would block the election
     * until our lease ends: delete it, guarded on its mod revision and exact bytes.
     */
    private void deleteOrphan(String election, io.etcd.jetcd.KeyValue kv) {
        log.warn(
                "deleting a leader record on this session's lease for an election it no longer runs: election={} "
                        + "lease={} mod_revision={}",
                election,
                kv.getLease(),
                kv.getModRevision());
        etcd.txn(t -> t.If(
                                new io.etcd.jetcd.op.Cmp(
                                        kv.getKey(),
                                        io.etcd.jetcd.op.Cmp.Op.EQUAL,
                                        io.etcd.jetcd.op.CmpTarget.modRevision(kv.getModRevision())),
                                new io.etcd.jetcd.op.Cmp(
                                        kv.getKey(),
                                        io.etcd.jetcd.op.Cmp.Op.EQUAL,
                                        io.etcd.jetcd.op.CmpTarget.value(kv.getValue())))
                        .Then(io.etcd.jetcd.op.Op.delete(kv.getKey(), io.etcd.jetcd.options.DeleteOption.DEFAULT)))
                .whenComplete((r, err) -> {
                    if (err != null) {
                        log.warn(
                                "deleting the orphaned record failed: election={} error=\"{}\"; it goes with the lease",
                                election,
                                EtcdFailure.describe(err));
                    }
                });
    }

    /** @param generation the failing watcher's generation; -1 = a failed restart */
    private void onWatchError(long generation, Throwable t) {
        if (closed.get() || crashed) {
            return;
        }
        try {
            workPool.execute(() -> handleWatchError(generation, t)); // leave jetcd's lock first
        } catch (java.util.concurrent.RejectedExecutionException ignored) {
            // closing
        }
    }

    private void handleWatchError(long generation, Throwable t) {
        handleWatchError(generation, t, false);
    }

    /** @param now re-create without backoff (the member is hung, not the cluster) */
    private void handleWatchError(long generation, Throwable t, boolean now) {
        Watch.Watcher old;
        Duration delay;
        synchronized (watchLock) {
            if (generation != -1 && generation != watchGeneration) {
                return; // a late error of a watcher we already replaced
            }
            watchGeneration++; // any further callbacks of the failed watcher are ignored
            old = watcher;
            watcher = null;
            if (watchDelivering) {
                watchBackoff.reset();
                watchDelivering = false;
            }
            delay = now ? Duration.ZERO : watchBackoff.next();
            // the next watch goes to another member: the one that failed may be hung, partitioned or stopped
            watchEndpoint = (watchEndpoint + 1) % etcd.endpointCount();
        }
        if (old != null) {
            old.close();
        }
        metrics.watchRestarts.increment();
        boolean compacted = LeaseKeeper.unwrap(t) instanceof CompactedException;
        log.warn(
                "watch ended, re-creating in {} ms on {}: prefix={} from_revision={} error=\"{}\"",
                delay.toMillis(),
                etcd.endpoint(watchEndpoint),
                config.keyPrefix(),
                compacted ? "current" : etcd.history().revision() + 1,
                t == null ? "stream completed" : LeaseKeeper.describe(t));
        schedule(() -> restartWatch(compacted), delay);
    }

    private void restartWatch(boolean fromCurrent) {
        if (closed.get() || crashed) {
            return;
        }
        if (fromCurrent) {
            ClusterHistory.Mark before = etcd.history().mark();
            etcd.get(config.keyPrefix()).whenComplete((r, e) -> {
                if (e != null) {
                    onWatchError(-1, e);
                    return;
                }
                etcd.history().advance(before, r.getHeader().getRevision());
                try {
                    workPool.execute(() -> {
                        startWatch();
                        elections.values().forEach(DefaultLeaderElection::poke);
                    });
                } catch (java.util.concurrent.RejectedExecutionException ignored) {
                    // closing
                }
            });
            return;
        }
        startWatch();
        elections.values().forEach(DefaultLeaderElection::poke); // events may have been missed: everyone re-reads
    }

    /**
     * A response showed another etcd history (a cluster rebuilt from nothing: revisions start again at 1) and
     * {@link ClusterHistory} has reset the revision to that response's. The watch is re-created from there (from
     * the old revision it would stay silent until the new cluster caught up) and every election re-reads, since
     * nothing it knew about the old cluster (snapshot, pending delete) applies to the new one. Runs on the
     * responding thread (possibly inside jetcd's watch lock), so it only hands work off.
     */
    private void onClusterChanged(String change) {
        if (closed.get() || crashed) {
            return;
        }
        log.warn(
                "etcd cluster changed ({}): re-creating the watch from revision {}, every election re-reads",
                change,
                etcd.history().revision() + 1);
        metrics.watchRestarts.increment();
        try {
            workPool.execute(() -> {
                closeWatcher();
                startWatch();
                elections.values().forEach(DefaultLeaderElection::onClusterChanged);
            });
        } catch (java.util.concurrent.RejectedExecutionException ignored) {
            // closing
        }
    }

    /**
     * With RBAC, a role without readwrite on the key prefix would otherwise show up as elections that never
     * leave CANDIDATE. Probes both without changing anything: a read of the prefix, and a transaction whose
     * compare can never hold (a key with version -1) with a put under the prefix; etcd checks the permissions
     * of every key in a transaction before evaluating it.
     */
    private void checkPermissions() {
        if (config.username() == null) {
            return;
        }
        String probe = config.keyPrefix() + ".permission-probe";
        try {
            etcd.get(config.keyPrefix()).get(config.callTimeout().toMillis() + 100, TimeUnit.MILLISECONDS);
            etcd.txn(t -> t.If(new io.etcd.jetcd.op.Cmp(
                                    bytes(probe), io.etcd.jetcd.op.Cmp.Op.LESS, io.etcd.jetcd.op.CmpTarget.version(0)))
                            .Then(io.etcd.jetcd.op.Op.put(
                                    bytes(probe), bytes(""), io.etcd.jetcd.options.PutOption.DEFAULT)))
                    .get(config.callTimeout().toMillis() + 100, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ElectionException("interrupted while checking etcd permissions", e);
        } catch (Exception e) {
            if (EtcdFailure.code(e) == io.grpc.Status.Code.PERMISSION_DENIED) {
                throw new ElectionException(
                        "etcd user '" + config.username() + "' lacks readwrite permission on keyPrefix '"
                                + config.keyPrefix()
                                + "' (grant it: etcdctl role grant-permission <role> --prefix=true readwrite "
                                + config.keyPrefix() + "): " + EtcdFailure.describe(e),
                        EtcdFailure.unwrap(e));
            }
            log.warn(
                    "could not check etcd permissions on keyPrefix {} ({}); continuing",
                    config.keyPrefix(),
                    EtcdFailure.describe(e));
        }
    }

    /**
     * Reads every member's server version (best effort, one status call each, bounded by callTimeout) and warns
     * loudly for versions whose leader may revoke live leases after a stall (see {@link EtcdVersions}). The
     * gauge {@code fenceline.election.etcd.lease.revocation.bug} counts the affected members seen at open().
     */
    private void checkServerVersions() {
        List<String> affected = new ArrayList<>();
        List<String> seen = new ArrayList<>();
        for (int i = 0; i < etcd.endpointCount(); i++) {
            String uri = etcd.endpoint(i).uri;
            try {
                String v = etcd.status(i)
                        .get(config.callTimeout().toMillis() + 100, TimeUnit.MILLISECONDS)
                        .getVersion();
                seen.add(uri + "=" + v);
                if (EtcdVersions.hasLeaseRevocationBug(v)) {
                    affected.add(uri + "=" + v);
                }
            } catch (Exception e) {
                seen.add(uri + "=unknown (" + EtcdFailure.describe(e) + ")");
            }
        }
        metrics.leaseRevocationBugMembers(affected.size());
        if (!affected.isEmpty()) {
            log.warn(
                    "etcd members {} run a version whose leader can revoke live leases after a stall (slow disk, CPU "
                            + "starvation; fixed in etcd 3.4.31 / 3.5.13): a successor may then win before this leader's local "
                            + "deadline. Leadership.isValidNow() cannot protect against that; the resource fence must. Upgrade etcd.",
                    affected);
        } else {
            log.info("etcd server versions: {}", seen);
        }
    }

    // ------------------------------------------------------------------ liveness without trusting one stream

    /*
     * Followers must not depend on one watch stream: a member that hangs (SIGSTOP, a stuck disk, silent packet
     * loss) keeps the TCP connection open and the watch silent, and gRPC keepalive notices only after
     * keepaliveTime + keepaliveTimeout. So, every renew interval:
     *  1. every election that does not hold a term re-reads its keys (a linearizable read, with failover to
     *     the next member): a leader whose lease expired is noticed within one interval of the expiry, whatever
     *     the watch does;
     *  2. the watch gets a progress request; if the previous one got no response within callTimeout, the
     *     watch is re-created at once on the next member (it would only bring the events the reads find anyway,
     *     but a live watch keeps handovers fast).
     */
    private void startLivenessChecks() {
        long period = config.renewInterval().toNanos();
        livenessTask = workPool.scheduleWithFixedDelay(this::checkLiveness, period, period, TimeUnit.NANOSECONDS);
    }

    private void checkLiveness() {
        if (closed.get() || crashed) {
            return;
        }
        try {
            elections.values().forEach(DefaultLeaderElection::pollIfWaiting);
            checkWatch();
        } catch (RuntimeException e) {
            log.warn(
                    "liveness check failed; next one in {} ms",
                    config.renewInterval().toMillis(),
                    e);
        }
    }

    private void checkWatch() {
        Watch.Watcher w;
        long generation;
        synchronized (watchLock) {
            w = watcher;
            generation = watchGeneration;
        }
        if (w == null) {
            return; // being re-created
        }
        long now = System.nanoTime();
        long asked = progressRequestedNanos;
        if (asked != 0 && now - asked > config.callTimeout().toNanos() && lastWatchResponseNanos - asked < 0) {
            metrics.watchStalls.increment();
            log.warn(
                    "watch on {} gave no progress response within callTimeout={}ms: re-creating it on the next member",
                    etcd.endpoint(watchEndpoint),
                    config.callTimeout().toMillis());
            handleWatchError(generation, null, true);
            return;
        }
        if (asked == 0) {
            progressRequestedNanos = now;
            try {
                w.requestProgress();
            } catch (RuntimeException e) {
                log.debug("watch progress request failed", e);
            }
        }
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
        dependents.push(dependent);
        return () -> dependents.removeFirstOccurrence(dependent);
    }

    /** While the lease and the elections still hold: each dependent may still finish work under its term. */
    private void closeDependents() {
        AutoCloseable d;
        while ((d = dependents.poll()) != null) {
            try {
                d.close();
            } catch (Exception e) {
                log.warn("closing {} before the election session failed; closing the session anyway", d, e);
            }
        }
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
        if (shutdownHook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException alreadyShuttingDown) {
                // called from the hook itself
            }
        }
        closeDependents();
        closeElectionsAndLease();
    }

    private void closeFromHook() {
        if (closed.compareAndSet(false, true)) {
            log.info(
                    "JVM shutdown: closing {} dependent(s), then resigning all elections and revoking lease={}",
                    dependents.size(),
                    leaseId());
            closeDependents();
            closeElectionsAndLease();
        }
    }

    private void closeElectionsAndLease() {
        List<CompletableFuture<Void>> closing = new ArrayList<>();
        // Every term stops being valid first; the revoke below removes the records. With leaseLossHoldOff on, each
        // record is deleted with its resign marker first, else followers would take the revoke for a lost lease
        // and wait out the hold-off.
        boolean markResigns = !config.leaseLossHoldOff().isZero();
        for (DefaultLeaderElection e : List.copyOf(elections.values())) {
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
        if (livenessTask != null) {
            livenessTask.cancel(false);
        }
        closeWatcher();
        keeper.close();
        leaseThread.shutdownNow();
        workPool.shutdownNow();
        listenerThread.shutdown();
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
        if (shutdownHook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException ignored) {
                // shutting down anyway
            }
        }
        leaseThread.shutdownNow();
        workPool.shutdownNow();
        closeWatcher();
        try {
            etcd.close();
        } catch (RuntimeException ignored) {
            // crashing
        }
        listenerThread.shutdownNow();
    }

    private void closeWatcher() {
        Watch.Watcher w;
        synchronized (watchLock) {
            watchGeneration++;
            w = watcher;
            watcher = null;
        }
        if (w != null) {
            w.close();
        }
    }

    private static ThreadFactory daemon(String name) {
        AtomicInteger i = new AtomicInteger();
        return r -> {
            Thread t = new Thread(CallbackContext.marked(r), name + "-" + i.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
