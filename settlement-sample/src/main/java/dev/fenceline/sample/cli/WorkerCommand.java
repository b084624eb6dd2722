package dev.fenceline.sample.cli;

import dev.fenceline.sample.db.DatabaseWait;
import dev.fenceline.sample.db.SampleDatabase;
import dev.fenceline.sample.worker.Worker;
import dev.fenceline.sample.worker.WorkerConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "worker",
        mixinStandardHelpOptions = true,
        description = {
            "Run a settlement worker (campaigns; while leader, settles batches through the fenced writer).",
            "",
            "Runs until SIGTERM/SIGINT. While its leadership is valid it settles one batch of PENDING payments "
                    + "every interval, in one fenced transaction carrying its term. On SIGTERM: stop taking batches, finish"
                    + " the current one, resign, exit 0 (within the TTL). Keeps retrying while etcd is unreachable."
        })
final class WorkerCommand implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(WorkerCommand.class);

    @Mixin
    CommonOptions common;

    @Option(
            names = "--id",
            paramLabel = "ID",
            defaultValue = "${env:FENCELINE_WORKER_ID}",
            description =
                    "Worker (candidate) id, [A-Za-z0-9][A-Za-z0-9_.-]* (env FENCELINE_WORKER_ID; default worker-<pid>).")
    String id;

    @Option(
            names = "--ttl-ms",
            paramLabel = "MS",
            defaultValue = "${env:FENCELINE_TTL_MS:-5000}",
            description =
                    "Election lease TTL in ms, whole seconds 2000..3600000 (env FENCELINE_TTL_MS; default ${DEFAULT-VALUE}).")
    long ttlMs;

    @Option(
            names = "--batch-size",
            paramLabel = "N",
            defaultValue = "${env:FENCELINE_BATCH_SIZE:-100}",
            description = "Payments per batch, 1..10000 (env FENCELINE_BATCH_SIZE; default ${DEFAULT-VALUE}).")
    long batchSize;

    @Option(
            names = "--interval-ms",
            paramLabel = "MS",
            defaultValue = "${env:FENCELINE_INTERVAL_MS:-200}",
            description =
                    "Pause between batches in ms, 1..3600000 (env FENCELINE_INTERVAL_MS; default ${DEFAULT-VALUE}).")
    long intervalMs;

    @Option(
            names = "--metrics-port",
            paramLabel = "PORT",
            defaultValue = "${env:FENCELINE_METRICS_PORT}",
            description =
                    "Serve /metrics (Prometheus) and /health on this port; 0 = any free port (env FENCELINE_METRICS_PORT; default off).")
    Integer metricsPort;

    @Option(
            names = "--metrics-host",
            paramLabel = "HOST",
            defaultValue = "127.0.0.1",
            description = "Address for the metrics server (default ${DEFAULT-VALUE}).")
    String metricsHost;

    @Option(
            names = "--db-wait-ms",
            paramLabel = "MS",
            defaultValue = "${env:FENCELINE_DB_WAIT_MS:-300000}",
            description =
                    "How long to wait at start while PostgreSQL (or its pooler) is unreachable or closed to connections, "
                            + "0..86400000 (0 = one attempt); other connection errors (credentials, unknown role or database) fail "
                            + "at once (env FENCELINE_DB_WAIT_MS; default ${DEFAULT-VALUE}).")
    long dbWaitMs;

    @Option(
            names = "--history-file",
            paramLabel = "PATH",
            description =
                    "Append one JSON object per line for every state change and batch attempt (see docs/settlement-sample.md).")
    Path historyFile;

    @Option(
            names = "--debug-pause-inside-batch-file",
            paramLabel = "PATH",
            hidden = false,
            description =
                    "DEBUG (demo/tests): while PATH exists, a batch stops after its updates and before its commit, "
                            + "prints " + Worker.PAUSE_MARKER + " on stdout, and waits until PATH is deleted.")
    Path pauseInsideBatchFile;

    @Override
    public Integer call() throws Exception {
        String workerId = Validation.workerId(
                id == null || id.isBlank() ? "worker-" + ProcessHandle.current().pid() : id);
        Validation.between("--ttl-ms", ttlMs, 2_000, 3_600_000);
        Validation.check(
                ttlMs % 1000 == 0, "--ttl-ms must be whole seconds (etcd leases have 1 s resolution); got " + ttlMs);
        Validation.between("--batch-size", batchSize, 1, 10_000);
        Validation.between("--interval-ms", intervalMs, 1, 3_600_000);
        if (metricsPort != null) {
            Validation.between("--metrics-port", metricsPort, 0, 65_535);
        }
        Validation.between("--db-wait-ms", dbWaitMs, 0, 86_400_000);
        common.validateAll();
        // Ctrl-C ends the wait (no signal handler is installed yet).
        // The checks run inside the wait: their queries open the pool's other connections, which a pooler just
        // restarted may still refuse (PgBouncer's server_login_retry) after the first one got through. What the checks
        // find (an unknown election, a missing schema) fails at once.
        SampleDatabase db = new DatabaseWait(
                        Duration.ofMillis(dbWaitMs),
                        "--db-wait-ms",
                        Duration.ofSeconds(1),
                        d -> {
                            Thread.sleep(d.toMillis());
                            return false;
                        },
                        System::nanoTime)
                .open(() -> common.openDatabase("fenceline-worker-" + workerId, 3)
                        .checked(d -> {
                            Preconditions.requireKnownElection(d, common.election());
                            Preconditions.requireMigrated(d);
                        }));
        WorkerConfig cfg = new WorkerConfig(
                workerId,
                common.election(),
                common.election(),
                common.jdbcUrl(),
                common.dbUser,
                common.dbPassword(),
                common.etcdEndpoints(),
                Duration.ofMillis(ttlMs),
                (int) batchSize,
                Duration.ofMillis(intervalMs),
                metricsPort,
                metricsHost,
                historyFile,
                pauseInsideBatchFile,
                common.electionConfig());
        Worker worker = new Worker(cfg);
        installSignalHandlers(worker, Duration.ofMillis(ttlMs));
        return worker.run(db);
    }

    /**
     * SIGTERM/SIGINT: ask the worker to stop (it finishes the current batch, resigns, returns 0). A watchdog
     * bounds that by 3/4 of the TTL: past it the process halts with 0 anyway (an open transaction is then
     * rolled back by PostgreSQL when the connection drops; the lease expires at etcd).
     */
    @SuppressWarnings("removal")
    private static void installSignalHandlers(Worker worker, Duration ttl) {
        for (String name : new String[] {"TERM", "INT"}) {
            try {
                sun.misc.Signal.handle(new sun.misc.Signal(name), sig -> {
                    worker.requestStop("SIG" + name);
                    Thread watchdog = new Thread(
                            () -> {
                                try {
                                    if (!worker.awaitStopped(ttl.multipliedBy(3).dividedBy(4))) {
                                        log.warn(
                                                "worker did not stop within 3/4 of the TTL: abandoning the current batch and exiting");
                                        Runtime.getRuntime().halt(0);
                                    }
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                            },
                            "stop-watchdog");
                    watchdog.setDaemon(true);
                    watchdog.start();
                });
            } catch (IllegalArgumentException e) {
                log.debug("cannot handle SIG{}: {}", name, e.getMessage());
            }
        }
    }
}
