package dev.fenceline.faults.workload;

import dev.fenceline.faults.history.BatchAttempt;
import dev.fenceline.faults.history.HistoryFiles;
import dev.fenceline.faults.history.Outcome;
import dev.fenceline.faults.nemesis.ClockControl;
import dev.fenceline.faults.nemesis.PeerPartition;
import dev.fenceline.faults.nemesis.TcpProxy;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.EtcdMember;
import dev.fenceline.testkit.FreePorts;
import dev.fenceline.testkit.Processes;
import dev.fenceline.testkit.TestDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything a fault run needs, started for real: one PostgreSQL database (testkit), a 3-member etcd (testkit) whose
 * peer traffic runs through {@link PeerPartition} proxies, N worker processes of the sample jar — each reaching every
 * etcd member through its own {@link TcpProxy} (so one worker can be cut off from etcd) and, when libfaketime is
 * there, with a controllable wall clock — and a bounded payment inserter. The way to PostgreSQL (directly, through
 * PgBouncer, with a standby to fail over to) is the run's {@link PostgresSetup}, kept by {@link PostgresPath}.
 */
public final class FaultEnvironment implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(FaultEnvironment.class);

    public final RunConfig config;
    public final Path runDir;
    /** The run's database; with a standby its own data source reaches only the first primary: use {@link #dataSource}. */
    public final TestDatabase database;
    /** Unpooled connections to whichever server takes writes (follows a failover). */
    public final DataSource dataSource;
    /** How the workers reach PostgreSQL (pooler, standby, failover); {@link PostgresSetup#DIRECT} by default. */
    public final PostgresPath postgres;

    public final EtcdCluster etcd;
    public final PeerPartition peers;
    public final Map<String, List<TcpProxy>> clientProxies = new LinkedHashMap<>();
    public final List<WorkerProcess> workers = new ArrayList<>();
    public final ClockControl clock;
    public final PaymentInserter inserter;
    /** How many times each fault kind has been injected so far in this run (the runner counts, faults may read). */
    public final Map<String, Integer> injections = new java.util.concurrent.ConcurrentHashMap<>();

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private RogueWriter rogue;
    private volatile int injectionIndex;
    /** Workers that ended without the runner asking; each was restarted by {@link #superviseWorkers()}. */
    private final List<dev.fenceline.faults.history.WorkerExit> workerExits =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    private final java.util.concurrent.ScheduledExecutorService supervisor =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "worker-supervisor");
                t.setDaemon(true);
                return t;
            });

    private FaultEnvironment(
            RunConfig config,
            Path runDir,
            PostgresPath postgres,
            EtcdCluster etcd,
            PeerPartition peers,
            ClockControl clock,
            PaymentInserter inserter) {
        this.config = config;
        this.runDir = runDir;
        this.postgres = postgres;
        this.database = postgres.database();
        this.dataSource = postgres.dataSource();
        this.etcd = etcd;
        this.peers = peers;
        this.clock = clock;
        this.inserter = inserter;
    }

    public static FaultEnvironment start(RunConfig cfg) {
        Path runDir = cfg.outputDir().resolve("run-" + cfg.seed());
        try {
            if (Files.exists(runDir)) {
                Processes.deleteTree(runDir);
            }
            Files.createDirectories(runDir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (!Files.isRegularFile(cfg.jar())) {
            throw new IllegalStateException("the sample jar " + cfg.jar() + " does not exist: build it first with "
                    + "mvn -B -ntp -pl settlement-sample -am install -DskipTests");
        }
        // Run a private copy: a rebuild of the sample during the run must not pull the jar from under a restart.
        Path jar = runDir.resolve("fenceline.jar");
        try {
            Files.copy(cfg.jar(), jar, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot copy " + cfg.jar(), e);
        }
        PostgresPath db = PostgresPath.start(cfg.postgres());
        EtcdCluster etcd = null;
        PeerPartition peers = null;
        try {
            Processes.runOrFail(
                    List.of(javaBin().toString(), "-jar", jar.toString(), "migrate", "--jdbc-url", db.directJdbcUrl()),
                    Duration.ofMinutes(2),
                    null,
                    Map.of());
            db.attach();
            String jdbcUrl = db.workerJdbcUrl();
            etcd = EtcdCluster.start(EtcdCluster.Options.defaults().members(3).dataRoot(runDir));
            peers = PeerPartition.install(etcd);
            ClockControl clock = cfg.clockJumps() ? ClockControl.detect(runDir.resolve("clock"), true) : null;
            PaymentInserter inserter = new PaymentInserter(
                    db.dataSource(), cfg.paymentsPerTick(), cfg.paymentTickMs(), cfg.maxPayments(), cfg.seed());
            FaultEnvironment env = new FaultEnvironment(cfg, runDir, db, etcd, peers, clock, inserter);
            env.startWorkers(jdbcUrl, jar);
            env.supervisor.scheduleWithFixedDelay(
                    env::superviseWorkers, 500, 500, java.util.concurrent.TimeUnit.MILLISECONDS);
            return env;
        } catch (RuntimeException e) {
            if (peers != null) {
                peers.close();
            }
            if (etcd != null) {
                etcd.close();
            }
            db.close();
            throw e;
        }
    }

    private void startWorkers(String jdbcUrl, Path jar) {
        for (int i = 1; i <= config.workers(); i++) {
            String id = "w" + i;
            List<TcpProxy> proxies = new ArrayList<>();
            for (EtcdMember m : etcd.members()) {
                TcpProxy p = TcpProxy.start(id + "-" + m.name(), TcpProxy.loopback(m.clientPort()));
                proxies.add(p);
                closeables.add(p);
            }
            clientProxies.put(id, proxies);
            String etcdCsv =
                    String.join(",", proxies.stream().map(TcpProxy::endpoint).toList());
            Map<String, String> env = new HashMap<>();
            if (clock != null) {
                env.putAll(clock.environmentFor(id));
            }
            List<String> cmd = WorkerProcess.command(
                    javaBin(),
                    jar,
                    id,
                    config.ttl().toMillis(),
                    config.batchSize(),
                    config.intervalMs(),
                    FreePorts.next(),
                    runDir.resolve(id + ".history.jsonl"),
                    runDir.resolve(id + ".pause"),
                    jdbcUrl,
                    etcdCsv);
            WorkerProcess w = new WorkerProcess(
                    id,
                    cmd,
                    env,
                    runDir.resolve(id + ".history.jsonl"),
                    runDir.resolve(id + ".log"),
                    portOf(cmd),
                    runDir.resolve(id + ".pause"));
            workers.add(w);
            w.start();
        }
        log.info("started workers {}", workers);
    }

    private static int portOf(List<String> cmd) {
        return Integer.parseInt(cmd.get(cmd.indexOf("--metrics-port") + 1));
    }

    static Path javaBin() {
        return Path.of(System.getProperty("java.home"), "bin", "java");
    }

    /**
     * A worker that ends on its own (not killed by a fault, not stopped by the runner) is recorded — it becomes a
     * WORKER_EXITED violation — and started again, so that the run goes on with the fleet it was planned with instead
     * of silently shrinking.
     */
    void superviseWorkers() {
        for (WorkerProcess w : workers) {
            try {
                Optional<dev.fenceline.faults.history.WorkerExit> exit = w.takeUnexpectedExit(20);
                if (exit.isPresent()) {
                    workerExits.add(exit.get());
                    log.warn(
                            "worker {} exited on its own with code {}; restarting it. Last log lines:\n{}",
                            w.id(),
                            exit.get().exitCode(),
                            exit.get().lastLogLines());
                    System.out.printf(
                            "[fault-suite] worker %s exited on its own with code %d; restarted%n",
                            w.id(), exit.get().exitCode());
                    w.start();
                }
            } catch (RuntimeException e) {
                log.warn("supervising worker {}: {}", w.id(), e.toString());
            }
        }
    }

    /** Workers that ended without the runner asking, so far. */
    public List<dev.fenceline.faults.history.WorkerExit> workerExits() {
        return List.copyOf(workerExits);
    }

    /** The writer that is no leader (created with its role and protected tables on first use). */
    public synchronized RogueWriter rogue() {
        if (rogue == null) {
            rogue = RogueWriter.create(dataSource, postgres.writableJdbcUrl(), config.election(), runDir);
        }
        return rogue;
    }

    /** Every rogue write made so far (none when no rogue fault ran). */
    public synchronized List<dev.fenceline.faults.history.RogueAttempt> rogueAttempts() {
        return rogue == null ? List.of() : rogue.attempts();
    }

    /** Closed with the environment (e.g. a tracer a fault started, should its heal never run). */
    public synchronized void onClose(AutoCloseable c) {
        closeables.add(0, c);
    }

    /** The number of the injection under way (set by the runner before it injects). */
    public int injectionIndex() {
        return injectionIndex;
    }

    public void injectionIndex(int index) {
        this.injectionIndex = index;
    }

    public WorkerProcess worker(String id) {
        return workers.stream()
                .filter(w -> w.id().equals(id))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no worker " + id));
    }

    /** The worker whose /health says it is a valid LEADER (highest term wins), waiting at most {@code wait}. */
    public Optional<WorkerProcess> awaitLeader(Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        do {
            Optional<WorkerProcess> l = leaderNow();
            if (l.isPresent()) {
                return l;
            }
            sleep(200);
        } while (System.nanoTime() < deadline);
        return Optional.empty();
    }

    public Optional<WorkerProcess> leaderNow() {
        WorkerProcess best = null;
        long bestTerm = -1;
        for (WorkerProcess w : workers) {
            Optional<WorkerProcess.Health> h = w.health();
            if (h.isPresent()
                    && h.get().valid()
                    && "LEADER".equals(h.get().state())
                    && h.get().term() > bestTerm) {
                best = w;
                bestTerm = h.get().term();
            }
        }
        return Optional.ofNullable(best);
    }

    /** The last lines of every worker's log, for failure messages. */
    public String workerLogTails(int lines) {
        StringBuilder sb = new StringBuilder();
        for (WorkerProcess w : workers) {
            sb.append("--- ")
                    .append(w.id())
                    .append(w.isAlive() ? " (running)" : " (exited)")
                    .append(": ")
                    .append(w.logFile())
                    .append('\n');
            try {
                List<String> all = Files.readAllLines(w.logFile());
                all.subList(Math.max(0, all.size() - lines), all.size())
                        .forEach(l -> sb.append(l).append('\n'));
            } catch (IOException e) {
                sb.append("(no log: ").append(e.getMessage()).append(")\n");
            }
        }
        return sb.toString();
    }

    public long mark() {
        return DbSnapshot.mark(dataSource, config.election());
    }

    public HistoryFiles readHistory() {
        return HistoryFiles.read(
                workers.stream().map(WorkerProcess::historyFile).toList());
    }

    /**
     * Waits (bounded) until some worker's history shows a batch committed after {@code monoNs}; returns it. Halfway
     * through the bound without a commit, every running worker writes a thread dump into its log (once), so a run
     * that then fails the liveness check says what each worker was waiting for.
     */
    public Optional<BatchAttempt> awaitCommitAfter(long monoNs, Duration bound) {
        long start = System.nanoTime();
        long deadline = start + bound.toNanos();
        boolean dumped = false;
        do {
            if (!dumped && System.nanoTime() - start > bound.toNanos() / 2) {
                dumped = true;
                List<String> dumpedBy = new ArrayList<>();
                for (WorkerProcess w : workers) {
                    if (w.dumpThreads()) {
                        dumpedBy.add(w.id());
                    }
                }
                System.out.printf(
                        "[fault-suite] no commit %d s after the heal: thread dumps of %s written to their logs%n",
                        bound.toSeconds() / 2, dumpedBy);
            }
            Optional<BatchAttempt> c = readHistory().attempts.stream()
                    .filter(a -> a.outcome() == Outcome.COMMITTED && a.endMonoNs() > monoNs)
                    .min(Comparator.comparingLong(BatchAttempt::endMonoNs));
            if (c.isPresent()) {
                return c;
            }
            sleep(300);
        } while (System.nanoTime() < deadline);
        return Optional.empty();
    }

    /** Waits (bounded) until no payment is PENDING; returns the number still pending. */
    public long awaitDrained(Duration bound) {
        long deadline = System.nanoTime() + bound.toNanos();
        long pending;
        do {
            pending = DbSnapshot.pending(dataSource);
            if (pending == 0) {
                return 0;
            }
            sleep(500);
        } while (System.nanoTime() < deadline);
        return pending;
    }

    /** Undoes every fault that may still be in force (used on the way out, also after a failure). */
    public void healEverything() {
        for (WorkerProcess w : workers) {
            w.releasePause();
            w.thaw();
            if (clock != null) {
                clock.reset(w.id());
            }
        }
        clientProxies.values().forEach(l -> l.forEach(TcpProxy::heal));
        peers.heal();
        for (EtcdMember m : etcd.members()) {
            m.resume();
        }
        postgres.heal();
    }

    public static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    @Override
    public void close() {
        supervisor.shutdownNow();
        try {
            healEverything();
        } catch (RuntimeException e) {
            log.warn("heal on close failed: {}", e.toString());
        }
        inserter.close();
        for (WorkerProcess w : workers) {
            w.stop(Duration.ofSeconds(Math.max(3, config.ttl().toSeconds())));
        }
        synchronized (this) {
            if (rogue != null) {
                rogue.close();
            }
        }
        for (AutoCloseable c : closeables) {
            try {
                c.close();
            } catch (Exception ignored) {
                // best effort
            }
        }
        peers.close();
        etcd.close();
        postgres.close();
        try {
            Files.deleteIfExists(runDir.resolve("fenceline.jar")); // the private copy (~50 MB); logs and histories stay
        } catch (IOException e) {
            log.debug("cannot delete the jar copy: {}", e.toString());
        }
    }
}
