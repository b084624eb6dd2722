package dev.fenceline.faults.nemesis;

import dev.fenceline.faults.history.RogueAttempt;
import dev.fenceline.faults.workload.FaultEnvironment;
import dev.fenceline.faults.workload.RogueWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writers that are no leader ({@link RogueWriter}): {@link Faults#ROGUE_WRITER} tries every way past the fence once, at
 * seeded random moments while it is in force; {@link Faults#AUDIT_FLOOD} has many stale writers at once (bounded in
 * number, attempts and time), so the audit must keep up and the server must keep connections for the leaders.
 */
final class RogueFaults {
    private static final Logger log = LoggerFactory.getLogger(RogueFaults.class);
    /** Flood writers at once, and the attempts each makes at most (they also stop when the fault is healed). */
    static final int FLOOD_WRITERS = 12;

    static final int FLOOD_ATTEMPTS_PER_WRITER = 40;

    private RogueFaults() {}

    static List<Fault> all() {
        return List.of(
                new Fault() {
                    @Override
                    public String kind() {
                        return Faults.ROGUE_WRITER;
                    }

                    @Override
                    public Injection inject(FaultEnvironment env, Random rnd) throws SQLException {
                        return rogue(env, rnd);
                    }
                },
                new Fault() {
                    @Override
                    public String kind() {
                        return Faults.AUDIT_FLOOD;
                    }

                    @Override
                    public Injection inject(FaultEnvironment env, Random rnd) throws SQLException {
                        return flood(env, rnd);
                    }
                });
    }

    /** Every variant once, in a seeded order, at seeded random moments spread over the hold (one connection). */
    private static Injection rogue(FaultEnvironment env, Random rnd) throws SQLException {
        RogueWriter writer = env.rogue();
        int fault = env.injectionIndex();
        long[] markJump = writer.markAndMaxJump();
        List<RogueWriter.Variant> order = new ArrayList<>(Arrays.asList(RogueWriter.Variant.values()));
        Collections.shuffle(order, rnd);
        Duration hold = env.config.ttl().multipliedBy(2);
        long gapMs = Math.max(1, hold.toMillis() / order.size());
        long[] gaps = new long[order.size()];
        for (int i = 0; i < gaps.length; i++) {
            gaps[i] = rnd.nextInt((int) gapMs);
        }
        Random inner = new Random(rnd.nextLong());
        int before = writer.attempts().size();
        Thread t = new Thread(
                () -> {
                    Connection c = null;
                    for (int i = 0; i < order.size(); i++) {
                        FaultEnvironment.sleep(gaps[i]);
                        c = writer.attempt(
                                c, order.get(i), markJump[0], markJump[1], inner, fault, false, "fenceline-rogue");
                    }
                    closeQuietly(c);
                },
                "rogue-writer-" + fault);
        t.setDaemon(true);
        t.start();
        return Injection.of(
                writer.role(),
                order.size() + " rogue writes (" + order + ") at mark " + markJump[0] + ", max_term_jump " + markJump[1]
                        + "; " + writer.setupNote(),
                hold,
                () -> {
                    RogueWriter.join(List.of(t), Duration.ofSeconds(60));
                    log.info("fault #{}: {}", fault, summary(writer.attempts(), before));
                });
    }

    /** {@link #FLOOD_WRITERS} stale writers at once, each up to {@link #FLOOD_ATTEMPTS_PER_WRITER} attempts. */
    private static Injection flood(FaultEnvironment env, Random rnd) throws SQLException {
        RogueWriter writer = env.rogue();
        int fault = env.injectionIndex();
        long[] markJump = writer.markAndMaxJump();
        Duration hold = env.config.ttl().multipliedBy(2);
        long stopAt = System.nanoTime() + hold.toNanos();
        List<Thread> threads = new ArrayList<>();
        int before = writer.attempts().size();
        for (int w = 0; w < FLOOD_WRITERS; w++) {
            Random inner = new Random(rnd.nextLong());
            Thread t = new Thread(
                    () -> {
                        Connection c = null;
                        for (int i = 0; i < FLOOD_ATTEMPTS_PER_WRITER && System.nanoTime() < stopAt; i++) {
                            RogueWriter.Variant v = inner.nextInt(4) == 0
                                    ? RogueWriter.Variant.INTO_PARTITION
                                    : RogueWriter.Variant.STALE_TERM;
                            c = writer.attempt(
                                    c, v, markJump[0], markJump[1], inner, fault, true, "fenceline-audit-flood");
                        }
                        closeQuietly(c);
                    },
                    "audit-flood-" + fault + "-" + w);
            t.setDaemon(true);
            threads.add(t);
        }
        threads.forEach(Thread::start);
        return Injection.of(
                writer.role(),
                FLOOD_WRITERS + " stale writers at once, up to " + FLOOD_ATTEMPTS_PER_WRITER + " writes each within "
                        + hold.toMillis() + " ms, at mark " + markJump[0],
                hold,
                () -> {
                    RogueWriter.join(threads, Duration.ofSeconds(60));
                    log.info("fault #{}: {}", fault, summary(writer.attempts(), before));
                });
    }

    static String summary(List<RogueAttempt> all, int from) {
        List<RogueAttempt> made = all.subList(from, all.size());
        long refused = made.stream()
                .filter(a -> a.outcome() == dev.fenceline.faults.history.Outcome.REJECTED)
                .count();
        return made.size() + " rogue write(s) made, " + refused + " refused by the fence";
    }

    private static void closeQuietly(Connection c) {
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // broken already
            }
        }
    }
}
