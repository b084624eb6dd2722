package dev.fenceline.election.internal;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Keeps at most one etcd operation of an election in flight and evaluates once more after it when a trigger
 * arrived meanwhile; owns the election's retry timer and its backoff. Confined to the election's serial executor.
 */
final class EtcdOperationSlot {
    private final SerialExecutor exec;
    private final DefaultElectionSession session;
    private final Runnable evaluate;
    private final Backoff backoff;

    private boolean opInFlight;
    /** A trigger arrived while an operation was in flight: evaluate again once it completes. */
    private boolean dirty;

    /** Null before the first retry, and once the session's pool is shut down. */
    private @Nullable ScheduledFuture<?> retryTask;

    /** @param evaluate one evaluation of the election, run on {@code exec} */
    EtcdOperationSlot(SerialExecutor exec, DefaultElectionSession session, Backoff backoff, Runnable evaluate) {
        this.exec = exec;
        this.session = session;
        this.backoff = backoff;
        this.evaluate = evaluate;
    }

    boolean busy() {
        return opInFlight;
    }

    /** Evaluate again once the operation in flight completes (or at the next evaluation). */
    void markDirty() {
        dirty = true;
    }

    /** The evaluation starting now covers every trigger so far. */
    void clearDirty() {
        dirty = false;
    }

    /**
     * Sends {@code op} as the one operation in flight; {@code then} runs on the serial executor when it completes,
     * after which a trigger that arrived meanwhile causes one evaluation.
     */
    <T> void run(Supplier<CompletableFuture<T>> op, BiConsumer<T, Throwable> then) {
        opInFlight = true;
        // then receives the operation's failure; the stage the callback returns adds nothing
        var unused = op.get()
                .whenCompleteAsync(
                        (result, error) -> {
                            opInFlight = false;
                            then.accept(result, error);
                            if (dirty) {
                                evaluate.run();
                            }
                        },
                        exec);
    }

    /** Evaluate after {@code delay}; replaces a retry already scheduled. */
    void retryAfter(Duration delay) {
        cancelRetry();
        retryTask = session.schedule(() -> exec.execute(evaluate), delay);
    }

    /** Something failed: evaluate again after the next backoff step. */
    void retryWithBackoff() {
        retryAfter(backoff.next());
    }

    /** etcd answered: the next failure starts the backoff from its minimum. */
    void resetBackoff() {
        backoff.reset();
    }

    void cancelRetry() {
        if (retryTask != null) {
            retryTask.cancel(false);
        }
    }
}
