package dev.fenceline.faults;

import dev.fenceline.faults.check.CheckResult;
import dev.fenceline.faults.check.CheckerConfig;
import dev.fenceline.faults.check.HistoryChecker;
import dev.fenceline.faults.history.FaultRecord;
import dev.fenceline.faults.history.History;
import dev.fenceline.faults.history.HistoryFiles;
import dev.fenceline.faults.nemesis.Fault;
import dev.fenceline.faults.nemesis.Faults;
import dev.fenceline.faults.nemesis.Injection;
import dev.fenceline.faults.workload.DbSnapshot;
import dev.fenceline.faults.workload.FaultEnvironment;
import dev.fenceline.faults.workload.PostgresSetup;
import dev.fenceline.faults.workload.RunConfig;
import dev.fenceline.faults.workload.WorkerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a fault schedule against real processes and checks the history. The schedule (order of fault kinds and every
 * random choice inside a fault) is derived from the seed alone; which worker happens to be leader is up to the
 * election, so "the leader" is resolved at injection time.
 */
public final class FaultSuiteRunner {
    private static final Logger log = LoggerFactory.getLogger(FaultSuiteRunner.class);

    private FaultSuiteRunner() {}

    /** The kinds in the order they will be injected (smoke: each kind {@code rounds} times, shuffled by the seed). */
    public static List<String> plan(RunConfig cfg, int soakSteps) {
        Random rnd = new Random(cfg.seed());
        List<String> plan = new ArrayList<>();
        if (cfg.rounds() > 0) {
            for (int r = 0; r < cfg.rounds(); r++) {
                List<String> round = new ArrayList<>(cfg.kinds());
                Collections.shuffle(round, rnd);
                plan.addAll(round);
            }
        } else {
            for (int i = 0; i < soakSteps; i++) {
                plan.add(cfg.kinds().get(rnd.nextInt(cfg.kinds().size())));
            }
        }
        return plan;
    }

    public static RunReport run(RunConfig cfg) {
        long started = System.nanoTime();
        log.info(
                "fault run: seed {} (rerun with this seed to get the same schedule), kinds {}, PostgreSQL {}",
                cfg.seed(),
                cfg.kinds(),
                cfg.postgres());
        System.out.println("[fault-suite] seed " + cfg.seed());
        List<FaultRecord> faults = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        java.util.Map<String, String> skipNotes = new java.util.LinkedHashMap<>();
        try (FaultEnvironment env = FaultEnvironment.start(cfg)) {
            Duration ttl = cfg.ttl();
            Duration liveness = CheckerConfig.forTtl(ttl).livenessBound();
            // Warm-up: a leader, and a first commit, before any fault.
            env.inserter.start();
            Optional<WorkerProcess> first = env.awaitLeader(Duration.ofSeconds(60));
            if (first.isEmpty()) {
                throw new IllegalStateException("no worker became a valid leader within 60 s; see logs in " + env.runDir
                        + "\n" + env.workerLogTails(15));
            }
            env.awaitCommitAfter(0, Duration.ofSeconds(60));

            List<String> plan = plan(cfg, 100_000);
            long capAt = started + cfg.hardCap().toNanos();
            long soakEnd = cfg.duration() == null
                    ? Long.MAX_VALUE
                    : started + cfg.duration().toNanos();
            int index = 0;
            for (String kind : plan) {
                if (System.nanoTime() > capAt || System.nanoTime() > soakEnd) {
                    log.warn("time is up: stopping after {} injections", faults.size());
                    break;
                }
                Fault fault = Faults.get(kind);
                if (!fault.available(env)) {
                    if (!skipped.contains(kind)) {
                        skipped.add(kind);
                        String why = fault.unavailableReason(env);
                        if (why != null) {
                            skipNotes.put(kind, why);
                            System.out.println("[fault-suite] skipping " + kind + ": " + why);
                        }
                    }
                    continue;
                }
                index++;
                env.injectionIndex(index);
                env.injections.merge(kind, 1, Integer::sum);
                Random rnd = new Random(cfg.seed() * 1_000_003L + index);
                long mark = env.mark();
                long beforeInject = System.nanoTime();
                Injection inj;
                long injectAt;
                try {
                    inj = fault.inject(env, rnd);
                    // A fault is in force once inject() returns (it may first wait for a leader to aim at); an
                    // instantaneous one (no hold, e.g. the coordinator rebuild) counts from the start of the injection.
                    injectAt = inj.hold().isZero() ? beforeInject : System.nanoTime();
                } catch (Exception e) {
                    throw new IllegalStateException(
                            "injecting fault #" + index + " " + kind + " failed (seed " + cfg.seed() + "): " + e, e);
                }
                System.out.printf(
                        "[fault-suite] #%d %s on %s (%s), holding %d ms%n",
                        index, kind, inj.target(), inj.note(), inj.hold().toMillis());
                sleepNanos(inj.hold().toNanos());
                try {
                    inj.heal();
                } catch (Exception e) {
                    throw new IllegalStateException(
                            "healing fault #" + index + " " + kind + " failed (seed " + cfg.seed() + "): " + e, e);
                }
                long healAt = System.nanoTime();
                faults.add(new FaultRecord(
                        index,
                        kind,
                        inj.target(),
                        inj.worker(),
                        injectAt,
                        healAt,
                        mark,
                        inj.note(),
                        inj.raftLeaderStopped()));
                Optional<?> commit = env.awaitCommitAfter(healAt, liveness);
                System.out.printf(
                        "[fault-suite] #%d healed; %s%n",
                        index,
                        commit.isPresent()
                                ? "a leader committed again"
                                : "NO commit within " + liveness.toSeconds() + " s");
                FaultEnvironment.sleep(300);
            }

            // Drain: no more faults, no more payments; every pending payment must settle.
            env.healEverything();
            env.inserter.close();
            long pending = env.awaitDrained(Duration.ofSeconds(90).plus(ttl.multipliedBy(10)));
            if (pending != 0) {
                log.warn("{} payment(s) still pending after the drain period", pending);
            }
            for (WorkerProcess w : env.workers) {
                w.stop(ttl.plusSeconds(2));
            }
            DbSnapshot db = DbSnapshot.read(env.dataSource);
            String etcdVersion = Faults.etcdServerVersion(env);
            HistoryFiles files = env.readHistory();
            History history = History.builder(cfg.seed())
                    .resource(cfg.election())
                    .attempts(files.attempts)
                    .states(files.states)
                    .validities(files.validity)
                    .committed(db.batches())
                    .marks(db.marks())
                    .rejected(db.rejected())
                    .payments(db.payments())
                    .inserted(env.inserter.insertedIds())
                    .faults(faults)
                    .asynchronousStandby(cfg.postgres().standby() == PostgresSetup.Standby.ASYNCHRONOUS)
                    .rogue(env.rogueAttempts())
                    .rogueRowsCommitted(db.rogueRows())
                    .etcdServerVersion(etcdVersion)
                    .workerExits(env.workerExits())
                    .build();
            CheckResult result = new HistoryChecker(CheckerConfig.forTtl(ttl)).check(history);
            RunReport report = RunReport.of(
                    cfg,
                    history,
                    result,
                    skipped,
                    skipNotes,
                    files.unreadableLines,
                    Duration.ofNanos(System.nanoTime() - started),
                    env.runDir);
            report.write(cfg.outputDir().resolve("report-" + cfg.seed() + ".json"));
            report.write(cfg.outputDir().resolve("report-latest.json"));
            report.writeHtml(cfg.outputDir().resolve("report-" + cfg.seed() + ".html"));
            System.out.println("[fault-suite] report: " + cfg.outputDir().resolve("report-" + cfg.seed() + ".html"));
            System.out.println(report.table());
            System.out.println(result.explain());
            return report;
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(
                    "reading the database after the run failed (seed " + cfg.seed() + "): " + e, e);
        }
    }

    private static void sleepNanos(long nanos) {
        if (nanos > 0) {
            FaultEnvironment.sleep(Math.max(1, nanos / 1_000_000));
        }
    }
}
