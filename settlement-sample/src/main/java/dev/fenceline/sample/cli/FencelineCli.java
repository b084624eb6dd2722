package dev.fenceline.sample.cli;

import dev.fenceline.sample.db.SampleDatabase;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code fenceline} — the settlement sample's command line. Exit codes: 0 success; 1 failure (including
 * {@code verify} violations and unreachable servers); 2 bad input (nothing was changed).
 */
@Command(
        name = "fenceline",
        mixinStandardHelpOptions = true,
        versionProvider = FencelineCli.Version.class,
        description = "Fenceline settlement sample: leader election on etcd, fencing enforced by PostgreSQL.",
        subcommands = {
            MigrateCommand.class,
            SeedCommand.class,
            WorkerCommand.class,
            StatusCommand.class,
            AuditCommand.class,
            ResignCommand.class,
            PauseCommand.class,
            ResumeCommand.class,
            VerifyCommand.class,
            DemoCommand.class,
            CommandLine.HelpCommand.class
        },
        footer = {
            "",
            "Every command takes --jdbc-url, --etcd, --election (env FENCELINE_JDBC_URL, FENCELINE_ETCD, "
                    + "FENCELINE_ELECTION).",
            "Exit codes: 0 ok, 1 failure or violations, 2 bad input (nothing changed)."
        })
public final class FencelineCli implements Runnable {
    public static final int EXIT_OK = 0;
    public static final int EXIT_FAILURE = 1;
    public static final int EXIT_BAD_INPUT = 2;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a command is required");
    }

    /** gRPC (inside jetcd) logs through java.util.logging; a strong reference keeps this level (JUL holds loggers weakly). */
    private static final java.util.logging.Logger GRPC_JUL = java.util.logging.Logger.getLogger("io.grpc");

    public static void main(String[] args) {
        GRPC_JUL.setLevel(java.util.logging.Level.WARNING);
        System.exit(execute(args));
    }

    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new FencelineCli());
        cl.setCaseInsensitiveEnumValuesAllowed(true);
        cl.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            PrintWriter err = commandLine.getErr();
            if (ex instanceof BadInputException) {
                err.println(prefix(commandLine) + ": " + ex.getMessage());
                err.println("Try '" + prefix(commandLine) + " --help'. Nothing was changed.");
                err.flush();
                return EXIT_BAD_INPUT;
            }
            err.println(prefix(commandLine) + ": error: " + describe(ex));
            err.flush();
            if (System.getenv("FENCELINE_DEBUG") != null) {
                ex.printStackTrace(err);
            }
            return EXIT_FAILURE;
        });
        cl.setParameterExceptionHandler((ex, args) -> {
            CommandLine c = ex.getCommandLine();
            PrintWriter err = c.getErr();
            err.println(prefix(c) + ": " + ex.getMessage());
            err.println("Try '" + prefix(c) + " --help'. Nothing was changed.");
            err.flush();
            return EXIT_BAD_INPUT;
        });
        return cl;
    }

    public static int execute(String... args) {
        return commandLine().execute(args);
    }

    /** "fenceline", "fenceline seed", "fenceline audit rejected" ... */
    static String prefix(CommandLine c) {
        return c.getCommandSpec().qualifiedName(" ");
    }

    static String describe(Throwable ex) {
        String m = ex.getMessage();
        String root = SampleDatabase.rootMessage(ex);
        if (m == null) {
            return root;
        }
        return m.contains(root) ? m : m + " (" + root + ")";
    }

    public static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = FencelineCli.class.getPackage().getImplementationVersion();
            return new String[] {"fenceline " + (v == null ? "dev" : v)};
        }
    }
}
