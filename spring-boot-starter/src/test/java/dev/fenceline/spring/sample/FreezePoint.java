package dev.fenceline.spring.sample;

import dev.fenceline.task.RunContext;
import dev.fenceline.task.TaskListener;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.stereotype.Component;

/**
 * Freezes the next run of the fenced task after the task's last validity check and before its transaction begins:
 * the window a GC pause or a stopped VM can hit, which only the fence in PostgreSQL covers. The wait is bounded.
 */
@Component
public class FreezePoint implements TaskListener {
    private volatile CountDownLatch frozen = new CountDownLatch(1);
    private volatile CountDownLatch release = new CountDownLatch(0);
    private final AtomicLong frozenTerm = new AtomicLong();
    private volatile boolean armed;

    /** The next run freezes until {@link #release()}. */
    public synchronized void arm() {
        frozen = new CountDownLatch(1);
        release = new CountDownLatch(1);
        armed = true;
    }

    @Override
    public void onRunStarting(RunContext run, Object plan) {
        CountDownLatch gate;
        synchronized (this) {
            if (!armed) {
                return;
            }
            armed = false;
            gate = release;
            frozenTerm.set(run.term());
            frozen.countDown();
        }
        try {
            if (!gate.await(2, TimeUnit.MINUTES)) {
                throw new IllegalStateException("the test never released the frozen run");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits until a run is frozen; returns the term it carries. */
    public long awaitFrozen(long timeout, TimeUnit unit) throws InterruptedException {
        if (!frozen.await(timeout, unit)) {
            throw new IllegalStateException("no run froze within " + timeout + " " + unit);
        }
        return frozenTerm.get();
    }

    public void release() {
        release.countDown();
    }
}
