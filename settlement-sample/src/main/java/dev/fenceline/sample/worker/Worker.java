package dev.fenceline.sample.worker;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionEvent;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.fencing.CommitOutcomeUnknownException;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencedWriterConfig;
import dev.fenceline.fencing.StaleTermException;
import dev.fenceline.sample.db.SampleDatabase;
import dev.fenceline.sample.settlement.SettlementJob;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Files;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stateless settlement worker: campaigns in the election and, only while its leadership is valid, runs
 * one settlement batch per interval through the fenced writer with its term.
 *
 * <p>Threads: {@link #run()} runs the job loop on the caller's thread. Election state changes arrive on a
 * listener thread: they are written to the history file and wake the loop; the loop itself re-checks
 * {@link Leadership#isValidNow()} before every batch, so SUSPECT/LOST stop new batches at once. A batch
 * already inside its transaction is not aborted from the client: PostgreSQL's fence decides (a deposed
 * leader's transaction is rejected and audited). {@link #requestStop(String)} (SIGTERM) stops taking batches,
 * lets the current one finish, resigns and returns.
 */
public final class Worker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    public static final String PAUSE_MARKER = "FENCELINE-PAUSED-INSIDE-BATCH";

    private final WorkerConfig cfg;
    private final HistoryLog history;
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final AtomicBoolean stopping = new AtomicBoolean();
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    private final AtomicLong currentTerm = new AtomicLong();
    private final Map<Long, Long> leaderSince = new java.util.concurrent.ConcurrentHashMap<>();
    /** Terms this process has presented to PostgreSQL (it may have advanced the mark to them). */
    private final java.util.Set<Long> termsPresented = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final AtomicLong committed = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private volatile String stopReason;
    private volatile LeaderElection election;
    private volatile boolean inBatch;

    private final Counter paymentsSettled;
    private final Timer batchTimer;

    public Worker(WorkerConfig cfg) {
        this.cfg = cfg;
        this.history = cfg.historyFile() == null ? HistoryLog.disabled() : HistoryLog.open(cfg.historyFile(), cfg.workerId());
        registry.config().commonTags("worker", cfg.workerId(), "election", cfg.election());
        this.paymentsSettled = Counter.builder("fenceline_sample_payments_settled").description("Payments settled by this worker")
                .register(registry);
        this.batchTimer = Timer.builder("fenceline_sample_batch_duration").description("Settlement batch transaction time")
                .publishPercentileHistogram().register(registry);
        Gauge.builder("fenceline_sample_leader", () -> isLeaderNow() ? 1 : 0).description("1 while this worker holds a valid leadership")
                .register(registry);
        Gauge.builder("fenceline_sample_term", currentTerm::get).description("Term of the current/last leadership of this worker")
                .register(registry);
    }

    private Counter batches(String outcome) {
        return Counter.builder("fenceline_sample_batches").tag("outcome", outcome).description("Settlement batch attempts by outcome")
                .register(registry);
    }

    private boolean isLeaderNow() {
        LeaderElection e = election;
        return e != null && e.leadership().map(Leadership::isValidNow).orElse(false);
    }

    /** Asks the loop to stop taking batches; {@link #run()} then resigns and returns. Idempotent. */
    public void requestStop(String reason) {
        if (stopping.compareAndSet(false, true)) {
            stopReason = reason;
            log.info("worker {} stopping ({}){}", cfg.workerId(), reason, inBatch ? ": finishing the current batch first" : "");
            signal();
        }
    }

    /** Waits until {@link #run()} has resigned and released everything. */
    public boolean awaitStopped(Duration timeout) throws InterruptedException {
        return stopped.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void signal() {
        lock.lock();
        try {
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void sleep(Duration d) throws InterruptedException {
        lock.lock();
        try {
            if (!stopping.get()) {
                wake.await(d.toNanos(), TimeUnit.NANOSECONDS);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Runs until {@link #requestStop(String)}; returns 0 after a clean stop. */
    public int run() throws Exception {
        history.event("start", "pid", ProcessHandle.current().pid(), "election", cfg.election(), "ttl_ms", cfg.ttl().toMillis(),
                "batch_size", cfg.batchSize(), "interval_ms", cfg.interval().toMillis());
        MetricsServer metrics = null;
        SampleDatabase db = null;
        ElectionSession session = null;
        ElectionAdmin admin = null;
        try {
            db = SampleDatabase.open(cfg.jdbcUrl(), cfg.dbUser(), cfg.dbPassword(), "fenceline-worker-" + cfg.workerId(), 3);
            // TRANSACTION scope behind a transaction-mode pooler: one server session serves many clients between their
            // transactions, so nothing of the fence may outlive a transaction there (the writer then also sets its lock
            // and idle timeouts per transaction, because the pooler drops startup options).
            FencedWriter writer = FencedWriter.create(db.dataSource(),
                    FencedWriterConfig.builder().enterScope(cfg.enterScope()).build());
            SettlementJob job = new SettlementJob(db.dataSource(), writer, cfg.resource(), cfg.workerId(), cfg.batchSize());
            if (cfg.metricsPort() != null) {
                metrics = MetricsServer.start(cfg.metricsHost(), cfg.metricsPort(), registry, this::health);
                log.info("worker {}: /metrics and /health on http://{}:{}/", cfg.workerId(), cfg.metricsHost(), metrics.port());
            }
            ElectionConfig ec = ElectionConfig.builder().endpoints(cfg.etcdEndpoints()).ttl(cfg.ttl()).meterRegistry(registry).build();
            // etcd may be down when the worker starts: keep trying (a stateless worker must not need a restart)
            for (int attempt = 1; admin == null || session == null; attempt++) {
                try {
                    if (admin == null) {
                        admin = ElectionAdmin.connect(ec);
                    }
                    // A coordinator rebuilt from nothing restarts its term counter: make sure the next term is above
                    // the database's mark before campaigning, or every write of the new leader would be rejected.
                    raiseTermFloor(admin, db, 0);
                    session = ElectionSession.open(ec);
                } catch (RuntimeException | SQLException ex) {
                    if (attempt == 1 || attempt % 10 == 0) {
                        log.warn("worker {}: cannot reach etcd or the database yet (attempt {}): {}; retrying", cfg.workerId(),
                                attempt, SampleDatabase.rootMessage(ex));
                    }
                    sleep(Duration.ofSeconds(1));
                    if (stopping.get()) {
                        return 0;
                    }
                }
            }
            Map<String, String> meta = new LinkedHashMap<>();
            meta.put("pid", String.valueOf(ProcessHandle.current().pid()));
            meta.put("worker", cfg.workerId());
            LeaderElection e = session.election(cfg.election(), cfg.workerId(), meta);
            e.addListener(this::onStateChange);
            election = e;
            e.start();
            log.info("worker {} campaigning in election '{}' (ttl {} ms, batch {} every {} ms, enter scope {})", cfg.workerId(),
                    cfg.election(), cfg.ttl().toMillis(), cfg.batchSize(), cfg.interval().toMillis(), cfg.enterScope());

            long checkedTerm = -1;
            while (!stopping.get()) {
                Leadership l = e.leadership().orElse(null);
                if (l == null || e.state() != LeadershipState.LEADER || !l.isValidNow()) {
                    sleep(cfg.interval());
                    continue;
                }
                try {
                    if (l.term() != checkedTerm) {
                        if (!termAboveMark(admin, db, l, e)) {
                            // never write with this term; re-check (and resign again) until it is gone
                            checkedTerm = -1;
                            sleep(cfg.interval());
                            continue;
                        }
                        checkedTerm = l.term();
                    }
                    String outcome = runOneBatch(job, l);
                    if ("rejected".equals(outcome)) {
                        checkedTerm = -1; // still leader in etcd but stale in the database: compare with the mark again
                    }
                    if (!stopping.get()) {
                        sleep(outcome != null ? cfg.interval() : cfg.interval().multipliedBy(2));
                    }
                } catch (RuntimeException | SQLException ex) {
                    // transient trouble (database or etcd unreachable): log, back off, try again; never die of it
                    checkedTerm = -1;
                    log.warn("worker {} term {}: {}; retrying", cfg.workerId(), l.term(), SampleDatabase.rootMessage(ex));
                    sleep(cfg.interval().multipliedBy(5));
                }
            }
            return 0;
        } finally {
            LeaderElection e = election;
            if (e != null) {
                try {
                    e.resign().get(Math.max(500, cfg.ttl().toMillis() / 4), TimeUnit.MILLISECONDS);
                } catch (Exception ex) {
                    log.warn("resign did not complete: {}", SampleDatabase.rootMessage(ex));
                }
                e.close();
            }
            history.event("stop", "reason", stopReason == null ? "error" : stopReason);
            closeQuietly(session);
            closeQuietly(admin);
            closeQuietly(metrics);
            closeQuietly(db);
            history.close();
            stopped.countDown();
        }
    }

    /**
     * Returns true when this leadership's term may write: it is above the database mark, or equal to it and this
     * process presented that term itself (it advanced the mark). Otherwise — etcd's term counter is behind the
     * database, e.g. etcd was rebuilt from nothing — raises the term floor above the mark and resigns, so the next
     * campaign wins a usable term. (Equal to the mark but presented by someone else would mean two holders of one
     * term: never write with it.)
     */
    private boolean termAboveMark(ElectionAdmin admin, SampleDatabase db, Leadership l, LeaderElection e) throws SQLException {
        var mark = db.marks().stream().filter(m -> m.resource().equals(cfg.resource())).findFirst().orElse(null);
        long m = mark == null ? 0 : mark.highestAccepted();
        if (l.term() > m || (l.term() == m && termsPresented.contains(m))) {
            return true;
        }
        log.warn("worker {} won term {} but the database mark of '{}' is {} (held by {}): the coordinator lost its history; "
                + "raising the term floor to {} and resigning", cfg.workerId(), l.term(), cfg.resource(), m,
                mark == null ? null : mark.leaderId(), m + 1);
        raiseTermFloor(admin, db, m);
        try {
            e.resign().get(cfg.ttl().toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception ex) {
            log.warn("resign after raising the term floor did not complete: {}", SampleDatabase.rootMessage(ex));
        }
        return false;
    }

    private void raiseTermFloor(ElectionAdmin admin, SampleDatabase db, long knownMark) throws SQLException {
        long mark = Math.max(knownMark, Math.max(0, db.mark(cfg.resource())));
        if (mark <= 0) {
            return;
        }
        long etcdTerm = admin.currentTerm(cfg.election());
        if (etcdTerm <= mark) {
            long floor = admin.ensureTermAtLeast(cfg.election(), mark + 1);
            history.event("term_floor", "db_mark", mark, "etcd_term", etcdTerm, "floor", floor);
            log.info("worker {}: etcd term {} is not above the database mark {}: term floor raised to {}", cfg.workerId(),
                    etcdTerm, mark, floor);
        }
    }

    /** Returns the outcome of the batch attempted, or null when there was nothing to do. */
    private String runOneBatch(SettlementJob job, Leadership l) {
        // Fail closed: re-check validity right before taking work.
        if (stopping.get() || !l.isValidNow()) {
            return null;
        }
        SettlementJob.Plan plan;
        try {
            plan = job.plan();
        } catch (SQLException ex) {
            log.warn("worker {}: cannot read pending payments: {}", cfg.workerId(), SampleDatabase.rootMessage(ex));
            return null;
        }
        if (plan == null || stopping.get() || !l.isValidNow()) {
            return null;
        }
        long term = l.term();
        termsPresented.add(term);
        history.event("validity", "term", term, "valid_from_mono_ns", leaderSince.getOrDefault(term, System.nanoTime()),
                "valid_until_mono_ns", l.validUntilNanos());
        history.event("batch", "phase", "start", "term", term, "batch_key", plan.key(), "payments", plan.size());
        inBatch = true;
        long t0 = System.nanoTime();
        String outcome;
        String error = null;
        try {
            long batchId = job.settle(plan, term, this::insideBatchHook);
            outcome = "committed";
            committed.incrementAndGet();
            paymentsSettled.increment(plan.size());
            log.info("worker {} term {}: settled batch {} ({} payments, {} cents, key {})", cfg.workerId(), term, batchId,
                    plan.size(), plan.totalCents(), shortKey(plan.key()));
        } catch (CommitOutcomeUnknownException ex) {
            // The connection died during COMMIT: committed or not, the fence kept the order. The data tells.
            outcome = "unknown";
            error = ex.getMessage();
            log.warn("worker {} term {}: batch {} outcome UNKNOWN (connection lost during commit; deposed: {}): {}", cfg.workerId(),
                    term, shortKey(plan.key()), ex.deposed(), SampleDatabase.rootMessage(ex));
        } catch (StaleTermException ex) {
            outcome = "rejected";
            error = ex.getMessage();
            rejected.incrementAndGet();
            log.warn("worker {} term {}: batch {} REJECTED by PostgreSQL: {}", cfg.workerId(), term, shortKey(plan.key()), ex.getMessage());
        } catch (SettlementJob.BatchChangedException ex) {
            outcome = "failed";
            error = ex.getMessage();
            log.info("worker {} term {}: batch {} abandoned: {}", cfg.workerId(), term, shortKey(plan.key()), ex.getMessage());
        } catch (RuntimeException ex) {
            outcome = "failed";
            error = SampleDatabase.rootMessage(ex);
            log.warn("worker {} term {}: batch {} {}: {}", cfg.workerId(), term, shortKey(plan.key()), outcome, error);
        } finally {
            inBatch = false;
        }
        batchTimer.record(System.nanoTime() - t0, TimeUnit.NANOSECONDS);
        batches(outcome).increment();
        history.event("batch", "phase", "end", "term", term, "batch_key", plan.key(), "outcome", outcome,
                "payments", plan.size(), "error", error);
        return outcome;
    }

    private void insideBatchHook(long term, String key) throws InterruptedException {
        if (cfg.pauseInsideBatchFile() == null || !Files.exists(cfg.pauseInsideBatchFile())) {
            return;
        }
        history.event("debug_pause", "term", term, "batch_key", key);
        System.out.println(PAUSE_MARKER + " worker=" + cfg.workerId() + " term=" + term + " batch_key=" + key);
        System.out.flush();
        log.warn("worker {} term {}: DEBUG pause inside batch {} until {} is deleted", cfg.workerId(), term, shortKey(key),
                cfg.pauseInsideBatchFile());
        while (Files.exists(cfg.pauseInsideBatchFile())) {
            Thread.sleep(20);
        }
        log.warn("worker {} term {}: DEBUG pause over, continuing batch {} (its commit is now up to PostgreSQL)", cfg.workerId(),
                term, shortKey(key));
    }

    private void onStateChange(ElectionEvent ev) {
        if (ev.term() > 0 && (ev.state() == LeadershipState.LEADER || ev.state() == LeadershipState.SUSPECT)) {
            currentTerm.set(ev.term());
        }
        history.event("state", "state", ev.state().name(), "term", ev.term(), "lease", ev.leaseId(), "reason", ev.reason());
        ev.leadershipIfAny().ifPresent(l -> {
            // validity windows: [LEADER since, deadline] as known now; re-emitted before each batch and at the end
            if (ev.state() == LeadershipState.LEADER) {
                leaderSince.putIfAbsent(l.term(), ev.nanoTime());
            }
            if (leaderSince.containsKey(l.term())) {
                history.event("validity", "term", l.term(), "valid_from_mono_ns", leaderSince.get(l.term()),
                        "valid_until_mono_ns", l.validUntilNanos());
            }
        });
        log.info("worker {} election '{}': {} -> {} (term {}, lease {}): {}", cfg.workerId(), cfg.election(), ev.previous(), ev.state(),
                ev.term(), ev.leaseId(), ev.reason());
        signal();
    }

    MetricsServer.Health health() {
        LeaderElection e = election;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("status", stopping.get() ? "STOPPING" : "UP");
        m.put("worker", cfg.workerId());
        m.put("election", cfg.election());
        m.put("state", e == null ? "STARTING" : e.state().name());
        m.put("term", e == null ? 0 : e.leadership().map(Leadership::term).orElse(0L));
        m.put("valid", isLeaderNow());
        m.put("batches_committed", committed.get());
        m.put("batches_rejected", rejected.get());
        try {
            return new MetricsServer.Health(!stopping.get(), JSON.writeValueAsString(m));
        } catch (Exception ex) {
            return new MetricsServer.Health(false, "{\"status\":\"ERROR\"}");
        }
    }

    static String shortKey(String key) {
        return key.length() > 19 ? key.substring(0, 19) : key;
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception ex) {
            log.debug("close failed", ex);
        }
    }

    @Override
    public void close() {
        requestStop("close");
    }
}
