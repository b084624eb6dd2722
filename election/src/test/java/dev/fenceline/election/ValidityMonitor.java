package dev.fenceline.election;

import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;

/**
 * Samples isValidNow() of every candidate in a tight loop and records any instant at which two candidates
 * of the same election both claim valid leadership. Bounded: stops on close().
 */
final class ValidityMonitor implements AutoCloseable {
    final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
    private final Supplier<List<Candidate>> candidates;
    private final Thread thread;
    private volatile boolean running = true;
    volatile long samples;

    ValidityMonitor(Supplier<List<Candidate>> candidates) {
        this.candidates = candidates;
        this.thread = new Thread(this::run, "validity-monitor");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    static ValidityMonitor of(CopyOnWriteArrayList<Candidate> list) {
        return new ValidityMonitor(() -> list);
    }

    private void run() {
        while (running) {
            int valid = 0;
            StringBuilder who = new StringBuilder();
            for (Candidate c : candidates.get()) {
                if (c.isValidLeader()) {
                    valid++;
                    who.append(c.id).append("(term ").append(c.term()).append(") ");
                }
            }
            if (valid > 1 && violations.size() < 100) {
                violations.add("at " + System.nanoTime() + ": " + who);
            }
            samples++;
            Thread.onSpinWait();
            try {
                Thread.sleep(0, 200_000);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join(2000);
    }
}
