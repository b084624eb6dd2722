package dev.fenceline.task;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.fencing.CommitOutcomeUnknownException;
import dev.fenceline.fencing.FenceUnavailableException;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.TableNotProtectedException;
import dev.fenceline.fencing.UnknownResourceException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The body of a task's thread: warm-up and term floor, then read the election, ask {@link TaskDecision} what to do,
 * do it (wait, compare a won term with the database, run, resign), and hand over when close() is called.
 *
 * <p>Invariants: everything here runs on the task's one thread, so runs never overlap; a run is started only on a
 * {@link TaskDecision.Run} decided from facts read just before; the leadership this loop resigned is never run with
 * again, whatever the election still reports.
 */
final class TaskLoop implements Runnable {
    // the task's own category: operators configure logging for LeaderTask, not for its parts
    private static final Logger log = LoggerFactory.getLogger(LeaderTask.class);

    private final String resource;
    private final ElectionSession session;
    private final LeaderElection election;
    private final FencedWriter writer;
    private final LeaderTaskConfig config;
    private final TermFloor termFloor;
    private final TaskSignals signals;
    private final TaskStatus status;
    private final TaskMetrics metrics;
    private final WorkRunner runner;
    private final LongSupplier nanoClock;
    /** Only what a function schedule is asked and answers; every wait is measured on {@link #nanoClock}. */
    private final Clock wallClock;

    private final boolean ownsAdmin;
    /** Null until {@link #prepare()} connected one (when none was given to share). */
    private @Nullable ElectionAdmin admin;
    /** The leadership this task last resigned: never run with it again, whatever the election still reports. */
    private TaskDecision.Tenure resigned = TaskDecision.Tenure.NONE;

    TaskLoop(
            String resource,
            ElectionSession session,
            LeaderElection election,
            FencedWriter writer,
            LeaderTaskConfig config,
            TermFloor termFloor,
            TaskSignals signals,
            TaskStatus status,
            TaskMetrics metrics,
            WorkRunner runner,
            LongSupplier nanoClock,
            Clock wallClock,
            @Nullable ElectionAdmin admin) {
        this.resource = resource;
        this.session = session;
        this.election = election;
        this.writer = writer;
        this.config = config;
        this.termFloor = termFloor;
        this.signals = signals;
        this.status = status;
        this.metrics = metrics;
        this.runner = runner;
        this.nanoClock = nanoClock;
        this.wallClock = wallClock;
        this.admin = admin;
        this.ownsAdmin = admin == null;
    }

    @Override
    public void run() {
        try {
            status.setPhase(TaskPhase.STARTING, 0, "starting");
            if (!prepare()) {
                return;
            }
            election.start();
            status.setPhase(TaskPhase.CAMPAIGNING, 0, "campaigning in election '" + election.electionName() + "'");
            decideAndAct();
        } catch (RuntimeException | Error e) {
            log.error("task {}: stopped by an unexpected error", resource, e);
        } finally {
            handOver();
        }
    }

    /** The loop proper, until close() or a failure that waiting cannot fix. */
    private void decideAndAct() {
        TaskDecision.Tenure checked = TaskDecision.Tenure.NONE;
        // the term the schedule was last started for: a newly won one starts it afresh
        TaskDecision.Tenure scheduled = TaskDecision.Tenure.NONE;
        TaskSchedule.Due due = new TaskSchedule.Due(nanoClock.getAsLong(), null);
        Long lastStartNanos = null;
        long maxWait = Math.max(
                TimeUnit.MILLISECONDS.toNanos(10),
                Math.min(config.idleInterval().toNanos(), TimeUnit.SECONDS.toNanos(1)));
        while (true) {
            Leadership l = election.leadership().orElse(null);
            long now = nanoClock.getAsLong();
            TaskDecision.Tenure held = TaskDecision.Tenure.of(l);
            TaskDecision.Action a = TaskDecision.next(new TaskDecision.Facts(
                    signals.stopping(),
                    election.state(),
                    held,
                    l != null && l.isValidNow(),
                    checked,
                    resigned,
                    due.atNanos(),
                    now,
                    maxWait));
            if (a instanceof TaskDecision.Stop) {
                return;
            } else if (a instanceof TaskDecision.Wait w) {
                status.setPhase(w.phase(), l == null ? 0 : l.term(), w.why());
                signals.await(w.nanos());
            } else if (a instanceof TaskDecision.CheckTerm c) {
                status.setPhase(TaskPhase.LEADING, c.term(), "won term " + c.term());
                // next() checks a term only while one is held
                checked = checkTerm(Objects.requireNonNull(l, "CheckTerm without a leadership"))
                        ? held
                        : TaskDecision.Tenure.NONE;
                if (checked.equals(held) && !held.equals(scheduled)) {
                    scheduled = held;
                    due = firstInTerm(due, lastStartNanos);
                }
            } else if (a instanceof TaskDecision.Run r) {
                // next() runs only while a term is held and valid
                Leadership leading = Objects.requireNonNull(l, "Run without a leadership");
                long startNanos = nanoClock.getAsLong();
                Instant startWall = wallClock.instant();
                RunResult result = runner.runOnce(leading);
                if (result == null) {
                    continue; // validity ended or close() came between plan and run: nothing happened
                }
                lastStartNanos = startNanos;
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
                due = afterRun(result.outcome(), after, startNanos, due, startWall);
                if (after.recheckTerm()) {
                    checked = TaskDecision.Tenure.NONE;
                }
                if (after.resign()) {
                    raiseFloorQuietly(-1);
                    resign(leading, "PostgreSQL accepted a higher term than " + r.term());
                }
            }
        }
    }

    /** The schedule's first run in a newly won term. */
    private TaskSchedule.Due firstInTerm(TaskSchedule.Due kept, @Nullable Long lastStartNanos) {
        return told(config.schedule()
                .firstInTerm(
                        kept.atNanos(),
                        nanoClock.getAsLong(),
                        wallClock.instant(),
                        lastStartNanos,
                        config.failureBackoff().toNanos()));
    }

    private TaskSchedule.Due afterRun(
            RunOutcome outcome,
            TaskDecision.AfterRun after,
            long startNanos,
            TaskSchedule.Due dueThen,
            Instant startWall) {
        return told(config.schedule()
                .afterRun(
                        outcome,
                        after,
                        startNanos,
                        nanoClock.getAsLong(),
                        dueThen,
                        startWall,
                        wallClock.instant(),
                        config.failureBackoff().toNanos()));
    }

    /** Logs a schedule function that threw (its run is then due after failureBackoff). */
    private TaskSchedule.Due told(TaskSchedule.Due due) {
        if (due.failed() != null) {
            log.warn(
                    "task {}: schedule {} did not give the next start: {}; running after failureBackoff",
                    resource,
                    config.schedule(),
                    due.failed().toString());
        }
        return due;
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
        for (int attempt = 1; !signals.stopping(); attempt++) {
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
                signals.await(config.startRetryInterval().toNanos());
            }
        }
        return false;
    }

    /** Raises the election's term floor above the database's mark if needed, and says so. */
    private void raiseFloor(long knownMark) {
        // prepare() connects the admin before it first raises the floor, and before any term is held
        ElectionAdmin connected = Objects.requireNonNull(admin, "raiseFloor before prepare()");
        TermFloor.Raised r = termFloor.raise(connected, knownMark);
        if (r != null) {
            log.info(
                    "task {}: election term {} is not above the database mark {}: term floor raised to {}",
                    resource,
                    r.electionTerm(),
                    r.databaseMark(),
                    r.floorInForce());
            metrics.floorRaised();
            status.tell(t -> t.onTermFloorRaised(r.databaseMark(), r.electionTerm(), r.floorInForce()));
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
            signals.await(config.failureBackoff().toNanos());
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
        status.setPhase(TaskPhase.CAMPAIGNING, l.term(), "resigning term " + l.term() + ": " + why);
        // the loop does not wait for the delete; the callback logs a failure, so the stage it returns adds nothing
        var unused = election.resign().whenComplete((v, e) -> {
            if (e != null) {
                log.warn("task {}: resigning term {} did not complete: {}", resource, l.term(), e.toString());
            }
        });
    }

    /**
     * True, with the status's failure set and logged, when {@code e} is a failure that waiting cannot fix: then the
     * task stops (phase FAILED, health down) instead of retrying for ever while looking healthy. Only the fence's own
     * failures are judged; an error of the work's own SQL is the work's to handle. etcd's are not: what waiting cannot
     * fix there, ElectionSession.open and ElectionAdmin.connect refuse before a task exists, and the admin's later
     * failures do not say whether they would pass.
     */
    private boolean failedForGood(Throwable e) {
        String why = permanentFailure(e);
        if (why == null) {
            return false;
        }
        status.failed(why);
        log.error("task {}: stopping, because waiting cannot fix this: {}", resource, why);
        return true;
    }

    static @Nullable String permanentFailure(Throwable e) {
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
        status.setPhase(TaskPhase.STOPPING, status.lastTerm(), "handing over");
        try {
            if (election.state() != LeadershipState.LATENT) {
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
        String failure = status.failure();
        if (failure == null) {
            status.setPhase(TaskPhase.STOPPED, status.lastTerm(), "stopped");
        } else {
            status.setPhase(TaskPhase.FAILED, status.lastTerm(), failure);
        }
    }

    /** The longest a resign may take: two etcd calls and a margin. */
    Duration resignBound() {
        return session.config().callTimeout().multipliedBy(2).plusSeconds(1);
    }

    /** Closes the admin when the task connected it itself (a shared one is its owner's). */
    void closeAdmin() {
        if (ownsAdmin && admin != null) {
            try {
                admin.close();
            } catch (RuntimeException e) {
                log.debug("closing the election admin failed", e);
            }
        }
    }
}
