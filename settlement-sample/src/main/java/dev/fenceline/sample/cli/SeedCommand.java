package dev.fenceline.sample.cli;

import dev.fenceline.sample.db.SampleDatabase;
import dev.fenceline.sample.db.Seeder;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "seed",
        mixinStandardHelpOptions = true,
        description = {
            "Insert N PENDING payments spread over M merchants.",
            "",
            "The loader is not a leader: it writes through the audited break-glass (fencing.break_glass_log)."
        })
final class SeedCommand implements Callable<Integer> {
    @Mixin
    CommonOptions common;

    @Option(names = "--payments", required = true, paramLabel = "N", description = "Number of payments, 1..10000000.")
    long payments;

    @Option(
            names = "--merchants",
            paramLabel = "M",
            defaultValue = "100",
            description = "Number of merchants, 1..1000000 (default ${DEFAULT-VALUE}).")
    long merchants;

    @Override
    public Integer call() throws Exception {
        Validation.between("--payments", payments, 1, 10_000_000);
        Validation.between("--merchants", merchants, 1, 1_000_000);
        common.validateDatabaseOptions();
        try (SampleDatabase db = common.openDatabase("fenceline-seed", 2)) {
            Preconditions.requireKnownElection(db, common.election());
            Preconditions.requireMigrated(db);
            long t0 = System.nanoTime();
            long n = Seeder.seed(db.dataSource(), payments, (int) merchants);
            System.out.printf(
                    "seed: inserted %d PENDING payments for %d merchants in %d ms%n",
                    n, merchants, (System.nanoTime() - t0) / 1_000_000);
        }
        return FencelineCli.EXIT_OK;
    }
}
