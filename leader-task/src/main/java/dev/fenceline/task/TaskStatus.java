package dev.fenceline.task;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a task's thread has done so far (phase, term, last run, counts, the failure that stopped it), as
 * {@link LeaderTask#health()} and the meters read it, and the listeners told when it changes.
 *
 * <p>Invariant: only the task's thread writes (before it starts: the constructing thread); readers on other threads
 * see each field whole (volatile or atomic), not necessarily all fields of one moment.
 */
final class TaskStatus {
    // the task's own category: operators configure logging for LeaderTask, not for its parts
    private static final Logger log = LoggerFactory.getLogger(LeaderTask.class);

    private final String resource;
    private final List<TaskListener> listeners = new CopyOnWriteArrayList<>();
    private final AtomicLong committed = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private volatile TaskPhase phase = TaskPhase.NEW;
    private volatile long lastTerm;
    /** Null before the first run. */
    private volatile @Nullable RunResult lastRun;
    /** Set when a failure that waiting cannot fix stopped the task: what and how to fix it. */
    private volatile @Nullable String failure;

    TaskStatus(String resource, List<TaskListener> listeners) {
        this.resource = resource;
        this.listeners.addAll(listeners);
    }

    TaskPhase phase() {
        return phase;
    }

    /** The term of the current or last leadership, 0 if never. */
    long lastTerm() {
        return lastTerm;
    }

    @Nullable
    RunResult lastRun() {
        return lastRun;
    }

    long committed() {
        return committed.get();
    }

    long rejected() {
        return rejected.get();
    }

    @Nullable
    String failure() {
        return failure;
    }

    void failed(String why) {
        failure = why;
    }

    void addListener(TaskListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    void removeListener(TaskListener listener) {
        listeners.remove(listener);
    }

    /** Moves to {@code next} and tells the listeners; staying in a phase is not a change, except as below. */
    void setPhase(TaskPhase next, long term, String why) {
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

    /** Records a finished run (last run and counts); the caller meters it and tells the listeners. */
    void recordRun(RunResult r) {
        lastRun = r;
        if (r.outcome() == RunOutcome.COMMITTED) {
            committed.incrementAndGet();
        } else if (r.outcome() == RunOutcome.REJECTED_STALE) {
            rejected.incrementAndGet();
        }
    }

    /** Calls every listener; one that throws is logged and does not keep the others from being called. */
    void tell(Consumer<TaskListener> call) {
        for (TaskListener t : listeners) {
            try {
                call.accept(t);
            } catch (RuntimeException e) {
                log.warn("task {}: listener {} failed", resource, t, e);
            }
        }
    }
}
