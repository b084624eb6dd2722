package dev.fenceline.sample.worker;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionException;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencedWriterConfig;
import dev.fenceline.sample.db.DatabaseWait;
import dev.fenceline.sample.db.SampleDatabase;
import dev.fenceline.sample.settlement.SettlementJob;
import dev.fenceline.task.LeaderTask;
import dev.fenceline.task.LeaderTaskConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stateless settlement worker: a {@link LeaderTask} whose runs settle one batch each, only while this worker's
 * leadership is valid, in one fenced transaction at its term ({@link SettlementWork}); history, meters and /health
 * come from {@link WorkerEvents}. {@link #requestStop(String)} (SIGTERM) stops taking batches, lets the current one
 * finish, resigns (a waiting worker takes over within milliseconds) and makes {@link #run()} return.
 */
public final class Worker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);
    public static final String PAUSE_MARKER = "FENCELINE-PAUSED-INSIDE-BATCH";

    private final WorkerConfig cfg;
    private final HistoryLog history;
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final CountDownLatch stopRequested = new CountDownLatch(1);
    private final CountDownLatch stopped = new CountDownLatch(1);
    private volatile String stopReason;

    public Worker(WorkerConfig cfg) {
        this.cfg = cfg;
        this.history =
                cfg.historyFile() == null ? HistoryLog.disabled() : HistoryLog.open(cfg.historyFile(), cfg.workerId());
        registry.config().commonTags("worker", cfg.workerId(), "election", cfg.election());
    }

    /**
     * Runs on {@code database} (opened by the caller, which waited for it, see {@link DatabaseWait}; closed here) until
     * {@link #requestStop(String)}; returns 0 after a clean stop.
     */
    public int run(SampleDatabase database) throws Exception {
        history.event(
                "start",
                "pid",
                ProcessHandle.current().pid(),
                "election",
                cfg.election(),
                "ttl_ms",
                cfg.ttl().toMillis(),
                "batch_size",
                cfg.batchSize(),
                "interval_ms",
                cfg.interval().toMillis());
        try (SampleDatabase db = database) {
            // Nothing of the fence outlives a transaction: the same writer runs directly or behind a transaction-mode
            // pooler.
            FencedWriter writer = FencedWriter.create(db.dataSource(), FencedWriterConfig.defaults());
            SettlementWork work = new SettlementWork(
                    new SettlementJob(db.dataSource(), writer, cfg.resource(), cfg.workerId(), cfg.batchSize()),
                    cfg.workerId(),
                    cfg.pauseInsideBatchFile(),
                    history);
            WorkerEvents events = new WorkerEvents(cfg, history, registry, work);
            try (MetricsServer metrics = cfg.metricsPort() == null
                            ? null
                            : MetricsServer.start(
                                    cfg.metricsHost(),
                                    cfg.metricsPort(),
                                    registry,
                                    () -> events.health(this::stopping));
                    ElectionSession session = untilEtcdReachable(() -> ElectionSession.open(electionConfig()))) {
                if (metrics != null) {
                    log.info(
                            "worker {}: /metrics and /health on http://{}:{}/",
                            cfg.workerId(),
                            cfg.metricsHost(),
                            metrics.port());
                }
                if (session == null) {
                    return 0; // stopped while etcd was still unreachable
                }
                LeaderTask task = LeaderTask.builder(session, writer, cfg.resource(), work)
                        .listener(events)
                        .config(LeaderTaskConfig.builder()
                                .electionName(cfg.election())
                                .candidateId(cfg.workerId())
                                .metadata(Map.of(
                                        "pid",
                                        String.valueOf(ProcessHandle.current().pid()),
                                        "worker",
                                        cfg.workerId()))
                                .interval(cfg.interval())
                                .idleInterval(cfg.interval().multipliedBy(2))
                                .failureBackoff(cfg.interval().multipliedBy(5))
                                .meterRegistry(registry)
                                .build())
                        .build();
                events.bind(task);
                task.election().addListener(events);
                task.start();
                log.info(
                        "worker {} campaigning in election '{}' (ttl {} ms, batch {} every {} ms)",
                        cfg.workerId(),
                        cfg.election(),
                        cfg.ttl().toMillis(),
                        cfg.batchSize(),
                        cfg.interval().toMillis());
                stopRequested.await();
                task.close(); // finishes the current batch, then resigns
                history.event("stop", "reason", stopReason);
            }
            return 0;
        } finally {
            if (stopReason == null) {
                history.event("stop", "reason", "error");
            }
            history.close();
            stopped.countDown();
        }
    }

    /**
     * How to reach etcd (endpoints, TLS, credentials) from the validated options, with this worker's TTL: a fresh
     * builder, so the timings derived from the TTL (renew interval, margin, call timeout) follow it.
     */
    private ElectionConfig electionConfig() {
        ElectionConfig etcd = cfg.etcd();
        ElectionConfig.Builder b = ElectionConfig.builder()
                .endpoints(etcd.endpoints())
                .keyPrefix(etcd.keyPrefix())
                .connectTimeout(etcd.connectTimeout())
                .closeOnShutdown(etcd.closeOnShutdown())
                .ttl(cfg.ttl())
                .meterRegistry(registry);
        if (etcd.tlsCaFile() != null) {
            b.tlsCaFile(etcd.tlsCaFile());
        }
        if (etcd.tlsClientCertFile() != null) {
            b.tlsClientCert(etcd.tlsClientCertFile(), etcd.tlsClientKeyFile());
        }
        if (etcd.username() != null) {
            b.credentials(etcd.username(), etcd.password());
        }
        return b.build();
    }

    /**
     * etcd may be down or without quorum when the worker starts: keep trying — a stateless worker must not need a
     * restart. Only what the election classifies as transient ({@link ElectionException#isTransient()}: connection
     * refused, no leader, unavailable, deadline exceeded) is retried; anything else (an endpoint that is not etcd, a
     * TLS failure, credentials or permissions etcd refuses, invalid configuration) fails at once, since waiting cannot
     * fix it. Null when asked to stop meanwhile. (PostgreSQL has its own bounded wait before the worker runs:
     * {@link DatabaseWait}.)
     */
    private <T> T untilEtcdReachable(java.util.function.Supplier<T> open) throws InterruptedException {
        for (int attempt = 1; !stopping(); attempt++) {
            try {
                return open.get();
            } catch (ElectionException ex) {
                if (!ex.isTransient()) {
                    throw new IllegalStateException(
                            ex.getMessage() + " (the worker's options: --etcd for the endpoints, "
                                    + "--etcd-ca, --etcd-cert and --etcd-key for TLS, --etcd-user and --etcd-password-file for the "
                                    + "credentials)",
                            ex);
                }
                if (attempt == 1 || attempt % 10 == 0) {
                    log.warn(
                            "worker {}: cannot reach etcd yet (attempt {}): {}; retrying",
                            cfg.workerId(),
                            attempt,
                            SampleDatabase.rootMessage(ex));
                }
                stopRequested.await(1, TimeUnit.SECONDS);
            }
        }
        return null;
    }

    private boolean stopping() {
        return stopRequested.getCount() == 0;
    }

    /** Asks the worker to stop taking batches; {@link #run()} then resigns and returns. Idempotent. */
    public void requestStop(String reason) {
        if (!stopping()) {
            stopReason = reason;
            log.info("worker {} stopping ({}): the current batch, if any, finishes first", cfg.workerId(), reason);
            stopRequested.countDown();
        }
    }

    /** Waits until {@link #run()} has resigned and released everything. */
    public boolean awaitStopped(Duration timeout) throws InterruptedException {
        return stopped.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        requestStop("close");
    }
}
