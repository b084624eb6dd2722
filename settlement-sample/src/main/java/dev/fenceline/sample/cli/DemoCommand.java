package dev.fenceline.sample.cli;

import dev.fenceline.sample.demo.Demo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = {
            "Self-contained demo (no arguments needed): a leader frozen inside a batch, its stale commit rejected by PostgreSQL.",
            "",
            "Starts PostgreSQL and a 3-member etcd, 3 worker processes, seeds payments, freezes the leader with "
                    + "SIGSTOP inside a batch for longer than its TTL, shows a new leader with a higher term taking over "
                    + "and the old leader's stale commit rejected by PostgreSQL, then verify, the audit table and a "
                    + "summary. Leaves nothing running. Needs etcd on PATH and PostgreSQL server binaries (or the embedded "
                    + "fallback). Ignores --jdbc-url/--etcd: it starts its own servers."
        })
final class DemoCommand implements Callable<Integer> {
    @Option(names = "--workers", defaultValue = "3", description = "Worker processes, 2..5 (default ${DEFAULT-VALUE}).")
    long workers;

    @Option(
            names = "--payments",
            defaultValue = "2000",
            description = "Payments to seed, 100..100000 (default ${DEFAULT-VALUE}).")
    long payments;

    @Option(
            names = "--batch-size",
            defaultValue = "20",
            description = "Payments per batch, 1..1000 (default ${DEFAULT-VALUE}).")
    long batchSize;

    @Option(
            names = "--interval-ms",
            defaultValue = "100",
            description = "Pause between batches, 1..10000 ms (default ${DEFAULT-VALUE}).")
    long intervalMs;

    @Option(
            names = "--ttl-ms",
            defaultValue = "3000",
            description = "Lease TTL, whole seconds 2000..30000 ms (default ${DEFAULT-VALUE}).")
    long ttlMs;

    @Option(
            names = "--work-dir",
            paramLabel = "DIR",
            description =
                    "Where worker logs, histories and etcd data go (default: a new folder under the temp folder).")
    Path workDir;

    @Override
    public Integer call() throws Exception {
        Validation.between("--workers", workers, 2, 5);
        Validation.between("--payments", payments, 100, 100_000);
        Validation.between("--batch-size", batchSize, 1, 1000);
        Validation.between("--interval-ms", intervalMs, 1, 10_000);
        Validation.between("--ttl-ms", ttlMs, 2000, 30_000);
        Validation.check(ttlMs % 1000 == 0, "--ttl-ms must be whole seconds; got " + ttlMs);
        Path dir = workDir != null ? workDir : Files.createTempDirectory("fenceline-demo-");
        return new Demo(
                        new Demo.Options(
                                (int) workers,
                                (int) payments,
                                (int) batchSize,
                                intervalMs,
                                ttlMs,
                                dir.toAbsolutePath()),
                        System.out)
                .run();
    }
}
