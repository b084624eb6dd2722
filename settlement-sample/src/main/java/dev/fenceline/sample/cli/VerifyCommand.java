package dev.fenceline.sample.cli;

import dev.fenceline.sample.db.SampleDatabase;
import dev.fenceline.sample.verify.Verifier;
import dev.fenceline.sample.verify.VerifyLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "verify",
        mixinStandardHelpOptions = true,
        description = {
            "Check the settlement invariants in the database; exit 0 with a summary or 1 naming each violation.",
            "",
            "Rules: every payment settled at most once (exactly once when nothing is pending); batch terms never "
                    + "go backwards in commit order; no batch committed below the mark in force; every rejection audited "
                    + "(cross-checked against worker --history-file files when given). Exit 0 with a one-line summary, or "
                    + "exit 1 naming each violation."
        })
final class VerifyCommand implements Callable<Integer> {
    @Mixin
    CommonOptions common;

    @Option(
            names = "--history",
            paramLabel = "FILE",
            description = "A worker --history-file to cross-check (repeatable).")
    List<Path> history = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        common.validateDatabaseOptions();
        for (Path p : history) {
            Validation.check(Files.isReadable(p), "--history file is not readable: " + p);
        }
        try (SampleDatabase db = common.openDatabase("fenceline-verify", 2)) {
            Preconditions.requireKnownElection(db, common.election());
            Preconditions.requireMigrated(db);
            Verifier.Report r = Verifier.check(VerifyLoader.load(db.dataSource(), common.election(), history));
            if (r.ok()) {
                System.out.println("verify OK: " + r.summary());
                return FencelineCli.EXIT_OK;
            }
            System.out.println("verify FAILED: " + r.violations().size() + " violation(s)");
            for (String v : r.violations()) {
                System.out.println("  VIOLATION " + v);
            }
            return FencelineCli.EXIT_FAILURE;
        }
    }
}
