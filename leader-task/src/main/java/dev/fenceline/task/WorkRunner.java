package dev.fenceline.task;

import dev.fenceline.election.Leadership;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencingToken;
import dev.fenceline.fencing.WriteDescription;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the task's work once at a leadership's term: the plan outside any transaction, a last validity check, then
 * ONE fenced transaction, and records, meters and announces how it ended.
 *
 * <p>Invariant: no transaction is opened unless, right before it, close() was not called and the leadership was
 * still valid; what happens inside it is the fence's to decide.
 */
final class WorkRunner {
    // the task's own category: operators configure logging for LeaderTask, not for its parts
    private static final Logger log = LoggerFactory.getLogger(LeaderTask.class);

    private final String resource;
    private final String candidateId;
    private final TaskWork<Object> work;
    private final FencedWriter writer;
    private final TermFloor termFloor;
    private final TaskSignals signals;
    private final TaskStatus status;
    private final TaskMetrics metrics;
    private final LongSupplier nanoClock;
    private final AtomicLong runs = new AtomicLong();

    WorkRunner(
            String resource,
            String candidateId,
            TaskWork<Object> work,
            FencedWriter writer,
            TermFloor termFloor,
            TaskSignals signals,
            TaskStatus status,
            TaskMetrics metrics,
            LongSupplier nanoClock) {
        this.resource = resource;
        this.candidateId = candidateId;
        this.work = work;
        this.writer = writer;
        this.termFloor = termFloor;
        this.signals = signals;
        this.status = status;
        this.metrics = metrics;
        this.nanoClock = nanoClock;
    }

    /** One run, or null when nothing happened (validity ended or close() came before the transaction). */
    @Nullable
    RunResult runOnce(Leadership l) {
        long runNumber = runs.incrementAndGet();
        RunContext ctx = new Context(l, runNumber);
        long t0 = nanoClock.getAsLong();
        Object plan;
        try {
            plan = work.plan(ctx);
        } catch (Exception e) {
            return finish(new RunResult(RunOutcome.FAILED, l.term(), runNumber, null, 0, since(t0), e, Instant.now()));
        }
        if (plan == null) {
            return finish(new RunResult(
                    RunOutcome.NOTHING_TO_DO, l.term(), runNumber, null, 0, since(t0), null, Instant.now()));
        }
        if (signals.stopping() || !l.isValidNow()) { // fail closed: re-check right before the transaction
            return null;
        }
        FencingToken token = FencingToken.of(resource, l.term(), candidateId);
        termFloor.presenting(l.term());
        status.tell(t -> t.onRunStarting(ctx, plan));
        signals.runStarted();
        RunOutcome outcome;
        long units = 0;
        Throwable error = null;
        try {
            WriteDescription d = work.describe(plan);
            units = d == null
                    ? writer.transaction(token, c -> work.run(c, plan))
                    : writer.transaction(token, d, c -> work.run(c, plan));
            outcome = units > 0 ? RunOutcome.COMMITTED : RunOutcome.NOTHING_TO_DO;
        } catch (RuntimeException e) {
            outcome = TaskDecision.outcomeOf(e);
            error = e;
        } finally {
            signals.runEnded();
        }
        // every outcome but COMMITTED and NOTHING_TO_DO (REJECTED_STALE included) comes with the error that says why
        if (error != null) {
            if (outcome == RunOutcome.REJECTED_STALE) {
                log.warn(
                        "task {} term {}: run {} REJECTED by PostgreSQL: {}",
                        resource,
                        l.term(),
                        runNumber,
                        error.getMessage());
            } else {
                log.warn("task {} term {}: run {} {}: {}", resource, l.term(), runNumber, outcome, error.toString());
            }
        }

        return finish(new RunResult(outcome, l.term(), runNumber, plan, units, since(t0), error, Instant.now()));
    }

    private RunResult finish(RunResult r) {
        status.recordRun(r);
        metrics.run(r);
        status.tell(t -> t.onRunFinished(r));
        return r;
    }

    private Duration since(long t0) {
        return Duration.ofNanos(nanoClock.getAsLong() - t0);
    }

    private final class Context implements RunContext {
        private final Leadership leadership;
        private final long runNumber;

        Context(Leadership leadership, long runNumber) {
            this.leadership = leadership;
            this.runNumber = runNumber;
        }

        @Override
        public String resource() {
            return resource;
        }

        @Override
        public String candidateId() {
            return candidateId;
        }

        @Override
        public Leadership leadership() {
            return leadership;
        }

        @Override
        public long runNumber() {
            return runNumber;
        }

        @Override
        public boolean stopRequested() {
            return signals.stopping();
        }
    }
}
