package dev.fenceline.sample.worker;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.election.ElectionEvent;
import dev.fenceline.election.ElectionListener;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.fencing.CommitOutcomeUnknownException;
import dev.fenceline.sample.db.SampleDatabase;
import dev.fenceline.sample.settlement.SettlementJob;
import dev.fenceline.task.LeaderTask;
import dev.fenceline.task.RunContext;
import dev.fenceline.task.RunResult;
import dev.fenceline.task.TaskHealth;
import dev.fenceline.task.TaskListener;
import dev.fenceline.task.TaskPhase;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the worker tells the world: the history file (the fault suite's input: state changes, validity windows, one
 * start and one end per batch attempt), the sample's meters, /health and the log. Run events arrive on the task's
 * thread, election events on the session's listener thread.
 */
final class WorkerEvents implements TaskListener, ElectionListener {
    private static final Logger log = LoggerFactory.getLogger(WorkerEvents.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final WorkerConfig cfg;
    private final HistoryLog history;
    private final PrometheusMeterRegistry registry;
    private final SettlementWork work;
    private final Map<Long, Long> leaderSince = new ConcurrentHashMap<>();
    private final Counter paymentsSettled;
    private final Timer batchTimer;
    private volatile LeaderTask task;

    WorkerEvents(WorkerConfig cfg, HistoryLog history, PrometheusMeterRegistry registry, SettlementWork work) {
        this.cfg = cfg;
        this.history = history;
        this.registry = registry;
        this.work = work;
        paymentsSettled = Counter.builder("fenceline_sample_payments_settled")
                .description("Payments settled by this worker")
                .register(registry);
        batchTimer = Timer.builder("fenceline_sample_batch_duration")
                .description("Settlement batch transaction time")
                .publishPercentileHistogram()
                .register(registry);
        Gauge.builder("fenceline_sample_leader", () -> health().valid() ? 1 : 0)
                .description("1 while this worker holds a valid leadership")
                .register(registry);
        Gauge.builder("fenceline_sample_term", () -> health().term())
                .description("Term of the current/last leadership of this worker")
                .register(registry);
    }

    void bind(LeaderTask task) {
        this.task = task;
    }

    private TaskHealth health() {
        LeaderTask t = task;
        return t == null
                ? new TaskHealth(
                        cfg.resource(), cfg.election(), cfg.workerId(), null, null, 0, false, null, 0, 0, null, null)
                : t.health();
    }

    @Override
    public void onStateChange(ElectionEvent ev) {
        history.event(
                "state", "state", ev.state().name(), "term", ev.term(), "lease", ev.leaseId(), "reason", ev.reason());
        ev.leadershipIfAny().ifPresent(l -> {
            // validity windows: [LEADER since, deadline] as known now; re-emitted before each batch
            if (ev.state() == LeadershipState.LEADER) {
                leaderSince.putIfAbsent(l.term(), ev.nanoTime());
            }
            if (leaderSince.containsKey(l.term())) {
                validity(l.term(), l.validUntilNanos());
            }
        });
        log.info(
                "worker {} election '{}': {} -> {} (term {}, lease {}): {}",
                cfg.workerId(),
                cfg.election(),
                ev.previous(),
                ev.state(),
                ev.term(),
                ev.leaseId(),
                ev.reason());
    }

    private void validity(long term, long validUntilNanos) {
        history.event(
                "validity",
                "term",
                term,
                "valid_from_mono_ns",
                leaderSince.getOrDefault(term, System.nanoTime()),
                "valid_until_mono_ns",
                validUntilNanos);
    }

    @Override
    public void onRunStarting(RunContext run, Object plan) {
        SettlementJob.Plan p = (SettlementJob.Plan) plan;
        validity(run.term(), run.leadership().validUntilNanos());
        history.event("batch", "phase", "start", "term", run.term(), "batch_key", p.key(), "payments", p.size());
    }

    @Override
    public void onRunFinished(RunResult r) {
        if (!(r.plan() instanceof SettlementJob.Plan plan)) {
            if (r.error() != null) {
                log.warn(
                        "worker {}: cannot read pending payments: {}",
                        cfg.workerId(),
                        SampleDatabase.rootMessage(r.error()));
            }
            return; // nothing pending: no batch attempt
        }
        String outcome = switch (r.outcome()) {
            case COMMITTED, NOTHING_TO_DO -> "committed";
            case REJECTED_STALE -> "rejected";
            case COMMIT_UNKNOWN -> "unknown";
            case FAILED -> "failed";
        };
        String key = shortKey(plan.key());
        String error = r.error() == null
                ? null
                : outcome.equals("failed")
                        ? SampleDatabase.rootMessage(r.error())
                        : r.error().getMessage();
        if (r.error() == null) {
            paymentsSettled.increment(plan.size());
            log.info(
                    "worker {} term {}: settled batch {} ({} payments, {} cents, key {})",
                    cfg.workerId(),
                    r.term(),
                    work.lastBatchId,
                    plan.size(),
                    plan.totalCents(),
                    key);
        } else if (r.error() instanceof CommitOutcomeUnknownException u) {
            // The connection died during COMMIT: committed or not, the fence kept the order. The data tells.
            log.warn(
                    "worker {} term {}: batch {} outcome UNKNOWN (connection lost during commit; deposed: {}): {}",
                    cfg.workerId(),
                    r.term(),
                    key,
                    u.deposed(),
                    SampleDatabase.rootMessage(u));
        } else if (r.error() instanceof SettlementJob.BatchChangedException) {
            log.info("worker {} term {}: batch {} abandoned: {}", cfg.workerId(), r.term(), key, error);
        } else {
            log.warn("worker {} term {}: batch {} {}: {}", cfg.workerId(), r.term(), key, outcome.toUpperCase(), error);
        }
        batchTimer.record(r.duration());
        Counter.builder("fenceline_sample_batches")
                .tag("outcome", outcome)
                .description("Settlement batch attempts by outcome")
                .register(registry)
                .increment();
        history.event(
                "batch",
                "phase",
                "end",
                "term",
                r.term(),
                "batch_key",
                plan.key(),
                "outcome",
                outcome,
                "payments",
                plan.size(),
                "error",
                error);
    }

    @Override
    public void onTermFloorRaised(long databaseMark, long electionTerm, long floor) {
        history.event("term_floor", "db_mark", databaseMark, "etcd_term", electionTerm, "floor", floor);
        log.info(
                "worker {}: etcd term {} is not above the database mark {}: term floor raised to {}",
                cfg.workerId(),
                electionTerm,
                databaseMark,
                floor);
    }

    /** /health: {status, worker, election, state, term, valid, leader, leader_term, batches_committed, batches_rejected}. */
    MetricsServer.Health health(BooleanSupplier stopping) {
        LeaderTask t = task;
        TaskHealth h = health();
        Map<String, Object> m = new LinkedHashMap<>();
        boolean failed = h.phase() == TaskPhase.FAILED;
        m.put("status", failed ? "DOWN" : stopping.getAsBoolean() ? "STOPPING" : "UP");
        if (failed) {
            m.put("failure", h.failure());
        }
        m.put("worker", cfg.workerId());
        m.put("election", cfg.election());
        m.put("state", t == null ? "STARTING" : h.electionState().name());
        boolean holdsTerm = h.electionState() == LeadershipState.LEADER || h.electionState() == LeadershipState.SUSPECT;
        m.put("term", holdsTerm ? h.term() : 0);
        m.put("valid", h.valid());
        if (h.observedLeader() != null) {
            m.put("leader", h.observedLeader().leaderId());
            m.put("leader_term", h.observedLeader().term());
        }
        m.put("batches_committed", h.runsCommitted());
        m.put("batches_rejected", h.runsRejected());
        try {
            return new MetricsServer.Health(!failed && !stopping.getAsBoolean(), JSON.writeValueAsString(m));
        } catch (Exception ex) {
            return new MetricsServer.Health(false, "{\"status\":\"ERROR\"}");
        }
    }

    static String shortKey(String key) {
        return key.length() > 19 ? key.substring(0, 19) : key;
    }
}
