package dev.fenceline.election.internal;

import static dev.fenceline.election.internal.EtcdGateway.bytes;
import static dev.fenceline.election.internal.EtcdGateway.string;

import dev.fenceline.election.ElectionConfig;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one watch over the session's {@code keyPrefix} running and routes its events to the election they concern.
 * Events are only triggers: the election re-reads and decides. When the watch fails it is re-created, on the next
 * member, from the last seen revision, and every election re-reads, so a missed event costs one read, never
 * correctness.
 *
 * <p>Lock discipline: jetcd invokes the watch callbacks while holding its own internal lock, so callbacks never take
 * {@code lock}; they only read volatile/atomic fields or hand work to the work pool. And jetcd is never called
 * ({@code watch()}, {@code close()}) while holding {@code lock}.
 */
final class PrefixWatch {
    /** The session's category: operators filter the session's log lines by it. */
    private static final Logger log = LoggerFactory.getLogger(DefaultElectionSession.class);

    private final ElectionConfig config;
    private final EtcdGateway etcd;
    private final ElectionMetrics metrics;
    private final SessionThreads threads;
    private final SessionElections elections;
    private final OrphanedLeaderRecords orphans;
    /** True once the session is closed or crashed: nothing is (re-)created any more. */
    private final BooleanSupplier stopped;

    private final Object lock = new Object();
    /** Guarded by {@code lock}; null while being re-created. */
    private Watch.@Nullable Watcher watcher;
    /** Guarded by {@code lock}; bumped on every replacement, so callbacks of a replaced watcher are ignored. */
    private long generation;

    private volatile boolean delivering;
    private final Backoff backoff;
    /** The member the watch runs on; moves to the next member whenever the watch is re-created. */
    private volatile int endpoint;
    /** nanoTime of the last watch response of any kind (events, progress, created). */
    private volatile long lastResponseNanos;
    /** nanoTime of the oldest progress request not yet followed by a response; 0 = none outstanding. */
    private volatile long progressRequestedNanos;

    PrefixWatch(
            ElectionConfig config,
            EtcdGateway etcd,
            ElectionMetrics metrics,
            SessionThreads threads,
            SessionElections elections,
            OrphanedLeaderRecords orphans,
            BooleanSupplier stopped) {
        this.config = config;
        this.etcd = etcd;
        this.metrics = metrics;
        this.threads = threads;
        this.elections = elections;
        this.orphans = orphans;
        this.stopped = stopped;
        this.backoff = new Backoff(config.retryBackoffMin(), config.retryBackoffMax());
    }

    /** The etcd client URL the watch currently runs on. */
    String endpointUri() {
        return etcd.endpoint(endpoint).uri;
    }

    /** Starts a watch from the revision after the last seen one, replacing the current watcher if any. */
    void start() {
        if (stopped.getAsBoolean()) {
            return;
        }
        long gen;
        synchronized (lock) {
            gen = ++generation;
        }
        ClusterHistory.Mark from = etcd.history().mark();
        WatchOption opt = WatchOption.builder()
                .isPrefix(true)
                .withRevision(from.revision() + 1)
                .withRequireLeader(true) // a member cut off from the quorum cancels the watch instead of going silent
                .build();
        progressRequestedNanos = 0;
        lastResponseNanos = System.nanoTime();
        Watch.Watcher w = etcd.watchClient(endpoint)
                .watch(
                        bytes(config.keyPrefix()),
                        opt,
                        Watch.listener(r -> onResponse(from, r), t -> onError(gen, t), () -> onError(gen, null)));
        boolean current;
        Watch.Watcher previous = null;
        synchronized (lock) {
            current = gen == generation && !stopped.getAsBoolean();
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

    private void onResponse(ClusterHistory.Mark from, WatchResponse r) {
        // Watch headers may lag (a member's local state), so only their cluster id is checked.
        etcd.observe(from, r.getHeader(), false);
        lastResponseNanos = System.nanoTime();
        progressRequestedNanos = 0;
        if (!r.getEvents().isEmpty()) {
            delivering = true;
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
            } else {
                orphans.onEventWithoutElection(name, rest, ev);
            }
        }
    }

    /** @param gen the failing watcher's generation; -1 = a failed restart */
    private void onError(long gen, @Nullable Throwable t) {
        if (stopped.getAsBoolean()) {
            return;
        }
        threads.execute(() -> handleError(gen, t, false)); // leave jetcd's lock first
    }

    /** @param now re-create without backoff (the member is hung, not the cluster) */
    private void handleError(long gen, @Nullable Throwable t, boolean now) {
        Watch.Watcher old;
        Duration delay;
        synchronized (lock) {
            if (gen != -1 && gen != generation) {
                return; // a late error of a watcher we already replaced
            }
            generation++; // any further callbacks of the failed watcher are ignored
            old = watcher;
            watcher = null;
            if (delivering) {
                backoff.reset();
                delivering = false;
            }
            delay = now ? Duration.ZERO : backoff.next();
            // the next watch goes to another member: the one that failed may be hung, partitioned or stopped
            endpoint = (endpoint + 1) % etcd.endpointCount();
        }
        if (old != null) {
            old.close();
        }
        metrics.watchRestarts.increment();
        boolean compacted = t != null && LeaseKeeper.unwrap(t) instanceof CompactedException;
        log.warn(
                "watch ended, re-creating in {} ms on {}: prefix={} from_revision={} error=\"{}\"",
                delay.toMillis(),
                etcd.endpoint(endpoint),
                config.keyPrefix(),
                compacted ? "current" : etcd.history().revision() + 1,
                t == null ? "stream completed" : LeaseKeeper.describe(t));
        // a failed restart reports itself through onError; null once the pool is shut down, when no watch is wanted
        var unused = threads.schedule(() -> restart(compacted), delay);
    }

    private void restart(boolean fromCurrent) {
        if (stopped.getAsBoolean()) {
            return;
        }
        if (fromCurrent) {
            ClusterHistory.Mark before = etcd.history().mark();
            // the callback hands a failed read to onError; the stage it returns adds nothing
            var unused = etcd.get(config.keyPrefix()).whenComplete((r, e) -> {
                if (e != null) {
                    onError(-1, e);
                    return;
                }
                etcd.history().advance(before, r.getHeader().getRevision());
                threads.execute(() -> {
                    start();
                    elections.forEach(DefaultLeaderElection::poke);
                });
            });
            return;
        }
        start();
        elections.forEach(DefaultLeaderElection::poke); // events may have been missed: everyone re-reads
    }

    /**
     * A response showed another etcd history (a cluster rebuilt from nothing: revisions start again at 1) and
     * {@link ClusterHistory} has reset the revision to that response's. The watch is re-created from there (from
     * the old revision it would stay silent until the new cluster caught up) and every election re-reads, since
     * nothing it knew about the old cluster (snapshot, pending delete) applies to the new one. Runs on the
     * responding thread (possibly inside jetcd's watch lock), so it only hands work off.
     */
    void onClusterChanged(String change) {
        if (stopped.getAsBoolean()) {
            return;
        }
        log.warn(
                "etcd cluster changed ({}): re-creating the watch from revision {}, every election re-reads",
                change,
                etcd.history().revision() + 1);
        metrics.watchRestarts.increment();
        threads.execute(() -> {
            close();
            start();
            elections.forEach(DefaultLeaderElection::onClusterChanged);
        });
    }

    /**
     * One liveness step: asks the watch for progress; if the previous request got no response within callTimeout,
     * the member is taken as hung and the watch is re-created at once on the next member.
     */
    void checkProgress() {
        Watch.Watcher w;
        long gen;
        synchronized (lock) {
            w = watcher;
            gen = generation;
        }
        if (w == null) {
            return; // being re-created
        }
        long now = System.nanoTime();
        long asked = progressRequestedNanos;
        if (asked != 0 && now - asked > config.callTimeout().toNanos() && lastResponseNanos - asked < 0) {
            metrics.watchStalls.increment();
            log.warn(
                    "watch on {} gave no progress response within callTimeout={}ms: re-creating it on the next member",
                    etcd.endpoint(endpoint),
                    config.callTimeout().toMillis());
            handleError(gen, null, true);
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

    /** Closes the current watcher; callbacks still in flight from it are ignored. */
    void close() {
        Watch.Watcher w;
        synchronized (lock) {
            generation++;
            w = watcher;
            watcher = null;
        }
        if (w != null) {
            w.close();
        }
    }
}
