package dev.fenceline.sample.cli;

import dev.fenceline.sample.audit.AuditReports;
import dev.fenceline.sample.audit.Table;
import dev.fenceline.sample.db.SampleDatabase;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "audit",
        mixinStandardHelpOptions = true,
        description = "DBA reports from the audit and history tables.",
        subcommands = {AuditCommand.Rejected.class, AuditCommand.Terms.class})
final class AuditCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "audit needs a report: rejected or terms");
    }

    static Instant parseSince(String s) {
        if (s == null) {
            return null;
        }
        try {
            return Instant.parse(s);
        } catch (DateTimeParseException e) {
            // fall through
        }
        try {
            return OffsetDateTime.parse(s).toInstant();
        } catch (DateTimeParseException e) {
            // fall through
        }
        try {
            return LocalDate.parse(s).atStartOfDay().toInstant(ZoneOffset.UTC);
        } catch (DateTimeParseException e) {
            throw new BadInputException(
                    "--since must be an ISO-8601 instant or date, e.g. 2026-11-30T17:00:00Z or 2026-11-30 (got '" + s
                            + "')");
        }
    }

    @Command(
            name = "rejected",
            mixinStandardHelpOptions = true,
            description = "Rejected (stale or term-less) writes recorded in fencing.rejected_write, oldest first.")
    static final class Rejected implements Callable<Integer> {
        @Mixin
        CommonOptions common;

        @Option(
                names = "--since",
                paramLabel = "ISO-8601",
                description = "Only rejections at or after this instant (UTC date allowed).")
        String since;

        @Option(
                names = "--format",
                paramLabel = "FORMAT",
                defaultValue = "table",
                description = "table, json or csv (default ${DEFAULT-VALUE}).")
        String format;

        @Override
        public Integer call() throws Exception {
            Table.Format f = Table.Format.parse(format);
            Instant s = parseSince(since);
            common.validateDatabaseOptions();
            try (SampleDatabase db = common.openDatabase("fenceline-audit", 2)) {
                Preconditions.requireKnownElection(db, common.election());
                System.out.print(AuditReports.rejected(db.dataSource(), common.election(), s)
                        .render(f));
            }
            return FencelineCli.EXIT_OK;
        }
    }

    @Command(
            name = "terms",
            mixinStandardHelpOptions = true,
            description =
                    "Every term accepted by the database (fencing.term_history) with the batches it committed and the writes rejected at it.")
    static final class Terms implements Callable<Integer> {
        @Mixin
        CommonOptions common;

        @Option(
                names = "--format",
                paramLabel = "FORMAT",
                defaultValue = "table",
                description = "table, json or csv (default ${DEFAULT-VALUE}).")
        String format;

        @Override
        public Integer call() throws Exception {
            Table.Format f = Table.Format.parse(format);
            common.validateDatabaseOptions();
            try (SampleDatabase db = common.openDatabase("fenceline-audit", 2)) {
                Preconditions.requireKnownElection(db, common.election());
                Preconditions.requireMigrated(db);
                System.out.print(
                        AuditReports.terms(db.dataSource(), common.election()).render(f));
            }
            return FencelineCli.EXIT_OK;
        }
    }
}
