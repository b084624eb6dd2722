package dev.fenceline.election.internal;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs tasks one at a time, in submission order, on a shared delegate. Each election owns one: its state is
 * only ever touched from its serial executor, which is what makes the state machine race-free without locks
 * while thousands of elections share two threads.
 */
final class SerialExecutor implements Executor {
    private static final Logger log = LoggerFactory.getLogger(SerialExecutor.class);
    private final Executor delegate;
    private final Queue<Runnable> queue = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean scheduled = new AtomicBoolean();

    SerialExecutor(Executor delegate) {
        this.delegate = delegate;
    }

    @Override
    public void execute(Runnable task) {
        queue.add(task);
        schedule();
    }

    private void schedule() {
        if (scheduled.compareAndSet(false, true)) {
            try {
                delegate.execute(this::drain);
            } catch (RejectedExecutionException e) {
                scheduled.set(false);
                queue.clear(); // delegate shut down: the owner is closed or crashed
            }
        }
    }

    private void drain() {
        try {
            Runnable r;
            int budget = 256; // yield the thread now and then so one busy election cannot starve others
            while (budget-- > 0 && (r = queue.poll()) != null) {
                try {
                    r.run();
                } catch (RuntimeException | Error e) {
                    log.error("task failed on serial executor", e);
                }
            }
        } finally {
            scheduled.set(false);
            if (!queue.isEmpty()) {
                schedule();
            }
        }
    }
}
