package dev.fenceline.task;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.fencing.CommitOutcomeUnknownException;
import dev.fenceline.fencing.FenceUnavailableException;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencingToken;
import dev.fenceline.fencing.TableNotProtectedException;
import dev.fenceline.fencing.UnknownResourceException;
import dev.fenceline.fencing.WriteDescription;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a unit of work repeatedly, only while this process is leader, each run in ONE fenced transaction at the
 * leadership's term (the fenced counterpart of ShedLock's {@code @SchedulerLock} or Curator's
 * {@code LeaderSelector}). See docs/leader-task.md.
 *
 * <pre>{@code
 * LeaderTask task = LeaderTask.builder(session, writer, "settlement", TaskWork.of(ctx -> settleSome(ctx)))
 *         .config(LeaderTaskConfig.builder().idleInterval(Duration.ofSeconds(1)).build())
 *         .build();
 * task.start();
 * ...
 * task.close();   // finishes the current run, then resigns: another task takes over in milliseconds
 * }</pre>
 *
 * <h2>Invariants</h2>
 * <ol>
 *   <li>A run starts only while the election is LEADER and {@link Leadership#isValidNow()}; it carries that
 *       leadership's term, and PostgreSQL's fence decides whether it commits. SUSPECT, LOST or close() stop new
 *       runs; a run already inside its transaction is not aborted from here (the fence decides).</li>
 *   <li>Before campaigning, the election's term floor is raised above the database's mark, and a won term is
 *       compared with the mark before its first run: a term at or below it (the coordinator lost its history) is
 *       resigned after raising the floor, never written with.</li>
 *   <li>A run PostgreSQL rejects as stale makes the task resign the term; the election campaigns again after its
 *       hold-off.</li>
 *   <li>One thread runs everything (start-up, decisions, runs, handover); listeners are called on it.</li>
 * </ol>
 */
public final class LeaderTask implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LeaderTask.class);

    private final LeaderElection election;
    private final ElectionSession session;
    /** Undoes {@link ElectionSession#closeFirst} once this task has closed on its own. */
    private volatile Runnable unregisterFromSession = () -> {};
    /** Set when a failure that waiting cannot fix stopped the task: what and how to fix it. */
    private volatile String failure;

    private final FencedWriter writer;
    private final String resource;
    private final TaskWork<Object> work;
    private final LeaderTaskConfig config;
    private final List<TaskListener> listeners = new CopyOnWriteArrayList<>();
    private final LongSupplier nanoClock;
    private final TaskMetrics metrics;
    private final TermFloor termFloor;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    private final Thread thread;
    private final AtomicLong runs = new AtomicLong();
    private final AtomicLong committed = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();

    private ElectionAdmin admin;
    private final boolean ownsAdmin;
    private volatile TaskPhase phase = TaskPhase.NEW;
    private volatile boolean started;
    private volatile boolean stopping;
    private volatile boolean inRun;
    private volatile long lastTerm;
    /** The leadership this task last resigned: never run with it again, whatever the election still reports. */
    private volatile TaskDecision.Tenure resigned = TaskDecision.Tenure.NONE;

    private volatile RunResult lastRun;

    @SuppressWarnings("unchecked")
    private LeaderTask(Builder<?> b) {
        this.session = b.session;
        this.writer = b.writer;
        this.resource = b.resource;
        this.work = (TaskWork<Object>) b.work;
        this.config = b.config;
        this.nanoClock = b.nanoClock;
        this.admin = b.admin;
        this.ownsAdmin = b.admin == null;
        this.listeners.addAll(b.listeners);
        String electionName = config.electionName() != null ? config.electionName() : resource;
        this.election = session.election(electionName, config.candidateId(), config.metadata());
        this.election.addListener(ev -> signal());
        this.metrics = new TaskMetrics(config.meterRegistry(), resource, electionName, this);
        this.termFloor = new TermFloor(writer, resource, electionName);
        this.thread = new Thread(this::loop, "fenceline-task-" + resource);
        this.thread.setDaemon(true);
    }

    /**
     * @param session  the election session to campaign through (the task creates its own handle in it)
     * @param writer   the fenced writer of the resource's database
     * @param resource the fenced resource ({@code [A-Za-z0-9][A-Za-z0-9._:-]{0,62}}); also the election's name
     *                 unless {@link LeaderTaskConfig#electionName()} is set
     * @param work     what each run does
     */
    public static <P> Builder<P> builder(
            ElectionSession session, FencedWriter writer, String resource, TaskWork<P> work) {
        return new Builder<>(session, writer, resource, work);
    }

    /** Warms up, raises the term floor and starts campaigning, on the task's own thread. Returns at once. */
    public void start() {
        lock.lock();
        try {
            if (stopping) {
                throw new IllegalStateException("start() called after close()");
            }
            if (started) {
                throw new IllegalStateException("start() called twice");
            }
            // Closed before the session's elections and lease, by whoever closes the session (its shutdown hook
            // included): the current run finishes under a valid term, whatever order the JVM runs its hooks in.
            unregisterFromSession = session.closeFirst(this);
            started = true;
        } finally {
            lock.unlock();
        }
        thread.start();
    }

    /**
     * Graceful handover: no new run starts; the current run may finish (at most
     * {@link LeaderTaskConfig#handoverTimeout()}, then its thread is interrupted); then the term is resigned so a
     * waiting candidate takes over within milliseconds, and the election handle is closed. Idempotent; a second caller
     * waits like the first. Called from a listener or from the work (the task's own thread) it does not wait. Closing
     * the task's {@link ElectionSession} (or its shutdown hook) closes the task this way first.
     */
    @Override
    public void close() {
        boolean wasStarted;
        lock.lock();
        try {
            wasStarted = started;
            stopping = true;
            wake.signalAll();
        } finally {
            lock.unlock();
        }
        if (!wasStarted) {
            if (phase != TaskPhase.STOPPED) {
                election.close();
                closeAdmin();
                setPhase(TaskPhase.STOPPED, 0, "closed before start");
            }
            return;
        }
        if (Thread.currentThread() == thread) {
            return;
        }
        try {
            awaitHandover();
        } finally {
            unregisterFromSession.run();
        }
    }

    /** Waits for the task's thread to finish its run and resign (interrupting a run past handoverTimeout). */
    private void awaitHandover() {
        try {
            long deadline = nanoClock.getAsLong() + config.handoverTimeout().toNanos();
            lock.lock();
            try {
                long left;
                while (inRun && thread.isAlive() && (left = deadline - nanoClock.getAsLong()) > 0) {
                    wake.await(left, TimeUnit.NANOSECONDS);
                }
            } finally {
                lock.unlock();
            }
            if (inRun) {
                log.warn(
                        "task {}: the current run did not finish within handoverTimeout {} ms; interrupting it",
                        resource,
                        config.handoverTimeout().toMillis());
                thread.interrupt();
            }
            thread.join(resignBound().toMillis() + config.handoverTimeout().toMillis());
            if (thread.isAlive()) {
                log.warn("task {}: handover did not finish in time; closing the election", resource);
                election.close();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            election.close();
        }
    }

    /** A snapshot of the task's state; cheap, no I/O. */
    public TaskHealth health() {
        Leadership l = election.leadership().orElse(null);
        boolean valid = l != null && l.isValidNow();
        TaskPhase p = phase;
        if (stopping && p != TaskPhase.STOPPED && p != TaskPhase.FAILED && p != TaskPhase.NEW) {
            p = TaskPhase.STOPPING; // close() was called: the task thread is finishing the run and resigning
        }
        return new TaskHealth(
                resource,
                election.electionName(),
                election.candidateId(),
                p,
                election.state(),
                l != null ? l.term() : lastTerm,
                valid,
                lastRun,
                committed.get(),
                rejected.get(),
                failure,
                election.observedLeader().orElse(null));
    }

    /** The task's election handle (add {@link dev.fenceline.election.ElectionListener}s; do not start or close it). */
    public LeaderElection election() {
        return election;
    }

    public String resource() {
        return resource;
    }

    public LeaderTaskConfig config() {
        return config;
    }

    public void addListener(TaskListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    public void removeListener(TaskListener listener) {
        listeners.remove(listener);
    }

    // ------------------------------------------------------------------------------------------------------------

    private void loop() {
        try {
            setPhase(TaskPhase.STARTING, 0, "starting");
            if (!prepare()) {
                return;
            }
            election.start();
            setPhase(TaskPhase.CAMPAIGNING, 0, "campaigning in election '" + election.electionName() + "'");
            TaskDecision.Tenure checked = TaskDecision.Tenure.NONE;
            long nextRunAt = nanoClock.getAsLong();
            long maxWait = Math.max(
                    TimeUnit.MILLISECONDS.toNanos(10),
                    Math.min(config.idleInterval().toNanos(), TimeUnit.SECONDS.toNanos(1)));
            while (true) {
                Leadership l = election.leadership().orElse(null);
                long now = nanoClock.getAsLong();
                TaskDecision.Tenure held = TaskDecision.Tenure.of(l);
                TaskDecision.Action a = TaskDecision.next(new TaskDecision.Facts(
                        stopping,
                        election.state(),
                        held,
                        l != null && l.isValidNow(),
                        checked,
                        resigned,
                        nextRunAt,
                        now,
                        maxWait));
                if (a instanceof TaskDecision.Stop) {
                    return;
                } else if (a instanceof TaskDecision.Wait w) {
                    setPhase(w.phase(), l == null ? 0 : l.term(), w.why());
                    await(w.nanos());
                } else if (a instanceof TaskDecision.CheckTerm c) {
                    setPhase(TaskPhase.LEADING, c.term(), "won term " + c.term());
                    checked = checkTerm(l) ? held : TaskDecision.Tenure.NONE;
                } else if (a instanceof TaskDecision.Run r) {
                    RunResult result = runOnce(l);
                    if (result == null) {
                        continue; // validity ended or close() came between plan and run: nothing happened
                    }
                    if (result.error() != null && failedForGood(result.error())) {
                        return;
                    }
                    Boolean deposed = result.error() instanceof CommitOutcomeUnknownException u ? u.deposed() : null;
                    TaskDecision.AfterRun after = TaskDecision.afterRun(
                            result.outcome(),
                            deposed,
                            config.interval().toNanos(),
                            config.idleInterval().toNanos(),
                            config.failureBackoff().toNanos());
                    nextRunAt = nanoClock.getAsLong() + after.delayNanos();
                    if (after.recheckTerm()) {
                        checked = TaskDecision.Tenure.NONE;
                    }
                    if (after.resign()) {
                        raiseFloorQuietly(-1);
                        resign(l, "PostgreSQL accepted a higher term than " + r.term());
                    }
                }
            }
        } catch (RuntimeException | Error e) {
            log.error("task {}: stopped by an unexpected error", resource, e);
        } finally {
            handOver();
        }
    }

    /**
     * Warm-up and term floor, retried until the floor could be checked or close() is called. A warm-up that fails
     * while the database answers (e.g. a role without CREATE TEMPORARY) is skipped: it only saves time.
     */
    private boolean prepare() {
        boolean warm = !config.warmUp();
        if (config.warmUp()) {
            TaskDecision.rehearse();
        }
        for (int attempt = 1; !stopping; attempt++) {
            RuntimeException warmUpFailure = null;
            if (!warm) {
                try {
                    Duration took = writer.warmUp(resource);
                    log.debug("task {}: writer warmed up in {} ms", resource, took.toMillis());
                    warm = true;
                } catch (RuntimeException e) {
                    warmUpFailure = e;
                }
            }
            try {
                if (admin == null) {
                    admin = ElectionAdmin.connect(session.config());
                }
                raiseFloor(-1);
                if (warmUpFailure != null) {
                    log.warn(
                            "task {}: warm-up failed, the first run will pay its costs: {}",
                            resource,
                            warmUpFailure.toString());
                }
                return true;
            } catch (RuntimeException e) {
                if (failedForGood(e)) {
                    return false;
                }
                if (attempt == 1 || attempt % 10 == 0) {
                    log.warn(
                            "task {}: cannot reach etcd or the database yet (attempt {}): {}; retrying",
                            resource,
                            attempt,
                            e.toString());
                }
                await(config.startRetryInterval().toNanos());
            }
        }
        return false;
    }

    /** Raises the election's term floor above the database's mark if needed, and says so. */
    private void raiseFloor(long knownMark) {
        TermFloor.Raised r = termFloor.raise(admin, knownMark);
        if (r != null) {
            log.info(
                    "task {}: election term {} is not above the database mark {}: term floor raised to {}",
                    resource,
                    r.electionTerm(),
                    r.databaseMark(),
                    r.floorInForce());
            metrics.floorRaised();
            tell(t -> t.onTermFloorRaised(r.databaseMark(), r.electionTerm(), r.floorInForce()));
        }
    }

    private void raiseFloorQuietly(long knownMark) {
        try {
            raiseFloor(knownMark);
        } catch (RuntimeException e) {
            log.warn("task {}: could not compare the term floor with the database mark: {}", resource, e.toString());
        }
    }

    /** True when {@code l}'s term may write; otherwise raises the floor and resigns it. */
    private boolean checkTerm(Leadership l) {
        long mark;
        try {
            mark = termFloor.databaseMark();
        } catch (RuntimeException e) {
            log.warn("task {} term {}: cannot read the database mark: {}; retrying", resource, l.term(), e.toString());
            await(config.failureBackoff().toNanos());
            return false;
        }
        if (termFloor.usable(l.term(), mark)) {
            return true;
        }
        log.warn(
                "task {} won term {} but the database mark is {}: the coordinator lost its history; raising the"
                        + " term floor and resigning",
                resource,
                l.term(),
                mark);
        raiseFloorQuietly(mark);
        resign(l, "term " + l.term() + " is not above the database mark " + mark);
        return false;
    }

    private void resign(Leadership l, String why) {
        resigned = TaskDecision.Tenure.of(l);
        metrics.resigned();
        setPhase(TaskPhase.CAMPAIGNING, l.term(), "resigning term " + l.term() + ": " + why);
        election.resign().whenComplete((v, e) -> {
            if (e != null) {
                log.warn("task {}: resigning term {} did not complete: {}", resource, l.term(), e.toString());
            }
        });
    }

    /** One run, or null when nothing happened (validity ended or close() came before the transaction). */
    private RunResult runOnce(Leadership l) {
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
        if (stopping || !l.isValidNow()) { // fail closed: re-check right before the transaction
            return null;
        }
        FencingToken token = FencingToken.of(resource, l.term(), election.candidateId());
        termFloor.presenting(l.term());
        tell(t -> t.onRunStarting(ctx, plan));
        inRun = true;
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
            lock.lock();
            try {
                inRun = false;
                wake.signalAll();
            } finally {
                lock.unlock();
            }
        }
        if (outcome == RunOutcome.REJECTED_STALE) {
            log.warn(
                    "task {} term {}: run {} REJECTED by PostgreSQL: {}",
                    resource,
                    l.term(),
                    runNumber,
                    error.getMessage());
        } else if (error != null) {
            log.warn("task {} term {}: run {} {}: {}", resource, l.term(), runNumber, outcome, error.toString());
        }
        return finish(new RunResult(outcome, l.term(), runNumber, plan, units, since(t0), error, Instant.now()));
    }

    private RunResult finish(RunResult r) {
        lastRun = r;
        if (r.outcome() == RunOutcome.COMMITTED) {
            committed.incrementAndGet();
        } else if (r.outcome() == RunOutcome.REJECTED_STALE) {
            rejected.incrementAndGet();
        }
        metrics.run(r);
        tell(t -> t.onRunFinished(r));
        return r;
    }

    private Duration since(long t0) {
        return Duration.ofNanos(nanoClock.getAsLong() - t0);
    }

    /**
     * True, with {@link #failure} set and logged, when {@code e} is a failure that waiting cannot fix: then the task
     * stops (phase FAILED, health down) instead of retrying for ever while looking healthy. Only the fence's own
     * failures are judged; an error of the work's own SQL is the work's to handle. etcd's are not: what waiting cannot
     * fix there, ElectionSession.open and ElectionAdmin.connect refuse before a task exists, and the admin's later
     * failures do not say whether they would pass.
     */
    private boolean failedForGood(Throwable e) {
        String why = permanentFailure(e);
        if (why == null) {
            return false;
        }
        failure = why;
        log.error("task {}: stopping, because waiting cannot fix this: {}", resource, why);
        return true;
    }

    static String permanentFailure(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof FenceUnavailableException f) {
                return f.isTransient() ? null : f.getMessage();
            }
            if (c instanceof TableNotProtectedException || c instanceof UnknownResourceException) {
                return c.getMessage();
            }
        }
        return null;
    }

    private void handOver() {
        setPhase(TaskPhase.STOPPING, lastTerm, "handing over");
        try {
            if (started && election.state() != LeadershipState.LATENT) {
                election.resign().get(resignBound().toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            log.warn("task {}: resign did not complete: {}", resource, e.toString());
        }
        election.close();
        closeAdmin();
        metrics.close();
        if (failure == null) {
            setPhase(TaskPhase.STOPPED, lastTerm, "stopped");
        } else {
            setPhase(TaskPhase.FAILED, lastTerm, failure);
        }
    }

    private Duration resignBound() {
        return session.config().callTimeout().multipliedBy(2).plusSeconds(1);
    }

    private void closeAdmin() {
        if (ownsAdmin && admin != null) {
            try {
                admin.close();
            } catch (RuntimeException e) {
                log.debug("closing the election admin failed", e);
            }
        }
    }

    private void setPhase(TaskPhase next, long term, String why) {
        long previousTerm = lastTerm;
        if (term > 0) {
            lastTerm = term;
        }
        TaskPhase previous = phase;
        // LEADING again at another term (a new term won while the task was busy) is a change listeners must hear
        if (previous == next && !(next == TaskPhase.LEADING && term > 0 && term != previousTerm)) {
            return;
        }
        phase = next;
        log.info("task {}: {} -> {} (term {}): {}", resource, previous, next, term, why);
        tell(t -> t.onPhaseChange(previous, next, term, why));
    }

    /** Calls every listener; one that throws is logged and does not keep the others from being called. */
    private void tell(Consumer<TaskListener> call) {
        for (TaskListener t : listeners) {
            try {
                call.accept(t);
            } catch (RuntimeException e) {
                log.warn("task {}: listener {} failed", resource, t, e);
            }
        }
    }

    private void signal() {
        lock.lock();
        try {
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void await(long nanos) {
        lock.lock();
        try {
            if (!stopping && nanos > 0) {
                wake.awaitNanos(nanos);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopping = true;
        } finally {
            lock.unlock();
        }
    }

    boolean leadingNow() {
        Leadership l = election.leadership().orElse(null);
        return phase == TaskPhase.LEADING && l != null && l.isValidNow();
    }

    long termNow() {
        return lastTerm;
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
            return election.candidateId();
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
            return stopping;
        }
    }

    /** Builds a {@link LeaderTask}; see {@link LeaderTask#builder}. */
    public static final class Builder<P> {
        private final ElectionSession session;
        private final FencedWriter writer;
        private final String resource;
        private final TaskWork<P> work;
        private LeaderTaskConfig config = LeaderTaskConfig.defaults();
        private ElectionAdmin admin;
        private final List<TaskListener> listeners = new CopyOnWriteArrayList<>();
        private LongSupplier nanoClock = System::nanoTime;

        private Builder(ElectionSession session, FencedWriter writer, String resource, TaskWork<P> work) {
            this.session = Objects.requireNonNull(session, "session");
            this.writer = Objects.requireNonNull(writer, "writer");
            this.work = Objects.requireNonNull(work, "work");
            FencingToken.of(resource, 1); // validates the resource name (IllegalArgumentException naming it)
            this.resource = resource;
        }

        public Builder<P> config(LeaderTaskConfig config) {
            this.config = Objects.requireNonNull(config, "config");
            return this;
        }

        /** An admin to share (not closed by the task); by default the task connects its own from the session's config. */
        public Builder<P> admin(ElectionAdmin admin) {
            this.admin = Objects.requireNonNull(admin, "admin");
            return this;
        }

        public Builder<P> listener(TaskListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /** The monotonic clock (tests). */
        Builder<P> nanoClock(LongSupplier nanoClock) {
            this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
            return this;
        }

        /**
         * Creates the task and its (not yet started) election handle.
         *
         * @throws IllegalArgumentException when no election name is set and the resource's name is not a valid
         *                                  election name
         */
        public LeaderTask build() {
            if (config.electionName() == null
                    && !LeaderTaskConfig.ELECTION_NAME.matcher(resource).matches()) {
                throw new IllegalArgumentException("electionName must be set when the resource name is not a valid"
                        + " election name ([A-Za-z0-9._-]{1,128}); resource was '" + resource + "'");
            }
            return new LeaderTask(this);
        }
    }
}
