package dev.fenceline.sample.worker;

import dev.fenceline.fencing.FencedContext;
import dev.fenceline.fencing.WriteDescription;
import dev.fenceline.sample.settlement.SettlementJob;
import dev.fenceline.task.RunContext;
import dev.fenceline.task.TaskWork;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One run of the worker's leader task: plan a settlement batch, settle it in the run's fenced transaction. */
final class SettlementWork implements TaskWork<SettlementJob.Plan> {
    private static final Logger log = LoggerFactory.getLogger(SettlementWork.class);

    private final SettlementJob job;
    private final String workerId;
    private final Path pauseInsideBatchFile;
    private final HistoryLog history;
    /** The batch id of the last settled batch (for the log line). */
    volatile long lastBatchId;

    SettlementWork(SettlementJob job, String workerId, Path pauseInsideBatchFile, HistoryLog history) {
        this.job = job;
        this.workerId = workerId;
        this.pauseInsideBatchFile = pauseInsideBatchFile;
        this.history = history;
    }

    @Override
    public SettlementJob.Plan plan(RunContext run) throws SQLException {
        return job.plan();
    }

    @Override
    public long run(FencedContext ctx, SettlementJob.Plan plan) throws Exception {
        lastBatchId = job.settleIn(ctx, plan, this::insideBatchHook);
        return plan.size();
    }

    @Override
    public WriteDescription describe(SettlementJob.Plan plan) {
        return job.describe(plan);
    }

    /** Debug hook (demo, tests): while the file exists, hold the batch after its updates, before its commit. */
    private void insideBatchHook(long term, String key) throws InterruptedException {
        if (pauseInsideBatchFile == null || !Files.exists(pauseInsideBatchFile)) {
            return;
        }
        history.event("debug_pause", "term", term, "batch_key", key);
        System.out.println(Worker.PAUSE_MARKER + " worker=" + workerId + " term=" + term + " batch_key=" + key);
        System.out.flush();
        log.warn(
                "worker {} term {}: DEBUG pause inside batch {} until {} is deleted",
                workerId,
                term,
                WorkerEvents.shortKey(key),
                pauseInsideBatchFile);
        while (Files.exists(pauseInsideBatchFile)) {
            Thread.sleep(20);
        }
        log.warn(
                "worker {} term {}: DEBUG pause over, continuing batch {} (its commit is now up to PostgreSQL)",
                workerId,
                term,
                WorkerEvents.shortKey(key));
    }
}
