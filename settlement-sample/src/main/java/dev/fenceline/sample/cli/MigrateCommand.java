package dev.fenceline.sample.cli;

import dev.fenceline.sample.db.SampleDatabase;
import dev.fenceline.sample.db.SampleMigrations;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

@Command(
        name = "migrate",
        mixinStandardHelpOptions = true,
        description = {
            "Apply the fencing migrations (schema fencing) and the sample's migrations (schema settlement).",
            "",
            "Idempotent: a second run changes nothing."
        })
final class MigrateCommand implements Callable<Integer> {
    @Mixin
    CommonOptions common;

    @Override
    public Integer call() throws Exception {
        common.validateDatabaseOptions();
        try (SampleDatabase db = common.openDatabase("fenceline-migrate", 2)) {
            int applied = SampleMigrations.migrate(db.dataSource());
            System.out.println("migrate: fencing and settlement schemas are up to date (" + applied
                    + " settlement migration(s) applied now); resources: "
                    + String.join(", ", db.registeredResources()));
        }
        return FencelineCli.EXIT_OK;
    }
}
