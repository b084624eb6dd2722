package dev.fenceline.task;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.Leadership;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencingToken;
import java.time.Clock;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
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
 *
 * <p>This class is the task's face (build, start, close, health, listeners); the work is split by job:
 * {@link TaskLoop} is the thread's body, {@link TaskDecision} decides, {@link TaskSchedule} says when runs are due, {@link WorkRunner} runs the work once,
 * {@link TermFloor} keeps terms above the database's mark, {@link TaskStatus} holds what health reports and
 * {@link TaskSignals} wakes the thread.
 */
public final class LeaderTask implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LeaderTask.class);

    private final ElectionSession session;
    private final LeaderElection election;
    private final String resource;
    private final LeaderTaskConfig config;
    private final TaskSignals signals;
    private final TaskStatus status;
    private final TaskLoop loop;
    private final Thread thread;
    /** Guards {@link #started} together with the stop request, so start() and close() never interleave. */
    private final Object lifecycle = new Object();
    /** Undoes {@link ElectionSession#closeFirst} once this task has closed on its own. */
    private volatile Runnable unregisterFromSession = () -> {};

    private volatile boolean started;

    @SuppressWarnings("unchecked")
    private LeaderTask(Builder<?> b) {
        this.session = b.session;
        this.resource = b.resource;
        this.config = b.config;
        String electionName = config.electionName() != null ? config.electionName() : resource;
        this.election = session.election(electionName, config.candidateId(), config.metadata());
        this.signals = new TaskSignals(b.nanoClock);
        this.status = new TaskStatus(resource, b.listeners);
        this.election.addListener(ev -> signals.wake());
        TaskMetrics metrics = new TaskMetrics(config.meterRegistry(), resource, electionName, this);
        TermFloor termFloor = new TermFloor(b.writer, resource, electionName);
        WorkRunner runner = new WorkRunner(
                resource,
                election.candidateId(),
                (TaskWork<Object>) b.work,
                b.writer,
                termFloor,
                signals,
                status,
                metrics,
                b.nanoClock);
        this.loop = new TaskLoop(
                resource,
                session,
                election,
                b.writer,
                config,
                termFloor,
                signals,
                status,
                metrics,
                runner,
                b.nanoClock,
                b.wallClock,
                b.admin);
        this.thread = new Thread(loop, "fenceline-task-" + resource);
        this.thread.setDaemon(true);
    }

    /**
     * A builder of the task that runs {@code work} on {@code resource} while this process leads.
     *
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
        synchronized (lifecycle) {
            if (signals.stopping()) {
                throw new IllegalStateException("start() called after close()");
            }
            if (started) {
                throw new IllegalStateException("start() called twice");
            }
            // Closed before the session's elections and lease, by whoever closes the session (its shutdown hook
            // included): the current run finishes under a valid term, whatever order the JVM runs its hooks in.
            unregisterFromSession = session.closeFirst(this);
            started = true;
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
        synchronized (lifecycle) {
            wasStarted = started;
            signals.requestStop();
        }
        if (!wasStarted) {
            if (status.phase() != TaskPhase.STOPPED) {
                election.close();
                loop.closeAdmin();
                status.setPhase(TaskPhase.STOPPED, 0, "closed before start");
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
            if (signals.awaitRunEnd(thread, config.handoverTimeout().toNanos())) {
                log.warn(
                        "task {}: the current run did not finish within handoverTimeout {} ms; interrupting it",
                        resource,
                        config.handoverTimeout().toMillis());
                thread.interrupt();
            }
            thread.join(loop.resignBound().toMillis() + config.handoverTimeout().toMillis());
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
        TaskPhase p = status.phase();
        if (signals.stopping() && p != TaskPhase.STOPPED && p != TaskPhase.FAILED && p != TaskPhase.NEW) {
            p = TaskPhase.STOPPING; // close() was called: the task thread is finishing the run and resigning
        }
        return new TaskHealth(
                resource,
                election.electionName(),
                election.candidateId(),
                p,
                election.state(),
                l != null ? l.term() : status.lastTerm(),
                valid,
                status.lastRun(),
                status.committed(),
                status.rejected(),
                status.failure(),
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
        status.addListener(listener);
    }

    public void removeListener(TaskListener listener) {
        status.removeListener(listener);
    }

    boolean leadingNow() {
        Leadership l = election.leadership().orElse(null);
        return status.phase() == TaskPhase.LEADING && l != null && l.isValidNow();
    }

    long termNow() {
        return status.lastTerm();
    }

    /** Builds a {@link LeaderTask}; see {@link LeaderTask#builder}. */
    public static final class Builder<P> {
        private final ElectionSession session;
        private final FencedWriter writer;
        private final String resource;
        private final TaskWork<P> work;
        private LeaderTaskConfig config = LeaderTaskConfig.defaults();
        /** Null: the task connects its own. */
        private @Nullable ElectionAdmin admin;

        private final List<TaskListener> listeners = new CopyOnWriteArrayList<>();
        private LongSupplier nanoClock = System::nanoTime;
        private Clock wallClock = Clock.systemUTC();

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

        /** The wall clock a function schedule is asked with (tests). */
        Builder<P> wallClock(Clock wallClock) {
            this.wallClock = Objects.requireNonNull(wallClock, "wallClock");
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
