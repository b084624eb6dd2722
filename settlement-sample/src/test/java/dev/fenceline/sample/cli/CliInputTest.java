package dev.fenceline.sample.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Bad input is refused before anything is contacted: no server runs in these tests. */
class CliInputTest {
    private record Run(int exit, String err, String out) {}

    private static Run run(String... args) {
        CommandLine cl = FencelineCli.commandLine();
        StringWriter err = new StringWriter();
        StringWriter out = new StringWriter();
        cl.setErr(new PrintWriter(err));
        cl.setOut(new PrintWriter(out));
        int exit = cl.execute(args);
        return new Run(exit, err.toString(), out.toString());
    }

    @Test
    void negativePaymentCountIsRefusedWithExitCode2() {
        Run r = run("seed", "--payments", "-5", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/none");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err())
                .contains("--payments must be between 1 and 10000000 (got -5)")
                .contains("Nothing was changed");
    }

    @Test
    void malformedJdbcUrlIsRefusedBeforeConnecting() {
        Run r = run("verify", "--jdbc-url", "mysql://localhost/x");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("--jdbc-url must be a PostgreSQL JDBC URL");
    }

    @Test
    void noOptionTakesTheDatabasePasswordItself() {
        Run r = run("verify", "--db-password", "secret");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("Unknown options: '--db-password'");
    }

    @Test
    void aDatabasePasswordFileThatDoesNotExistIsRefusedNamingOptionAndPath(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        String missing = dir.resolve("missing").toString();
        Run r = run("verify", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/none", "--db-password-file", missing);
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("--db-password-file").contains(missing);
    }

    @Test
    void malformedEtcdEndpointIsRefused() {
        Run r = run("pause", "--etcd", "localhost");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("--etcd endpoint must be [http(s)://]host:port with a port 1..65535: 'localhost'");
    }

    @Test
    void etcdTlsAndCredentialOptionsNamingMissingFilesAreRefusedNamingOptionAndPath(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        String ca =
                java.nio.file.Files.writeString(dir.resolve("ca.pem"), "pem").toString();
        String missing = dir.resolve("missing.pem").toString();
        String[][] rows = {
            {
                "--etcd-ca names a file that does not exist or is not readable: '" + missing
                        + "' (env FENCELINE_ETCD_CA)",
                "--etcd",
                "https://127.0.0.1:2379",
                "--etcd-ca",
                missing
            },
            {
                "--etcd-cert names a file that does not exist or is not readable: '" + missing
                        + "' (env FENCELINE_ETCD_CERT)",
                "--etcd",
                "https://127.0.0.1:2379",
                "--etcd-ca",
                ca,
                "--etcd-cert",
                missing,
                "--etcd-key",
                ca
            },
            {
                "--etcd-key names a file that does not exist or is not readable: '" + missing
                        + "' (env FENCELINE_ETCD_KEY)",
                "--etcd",
                "https://127.0.0.1:2379",
                "--etcd-ca",
                ca,
                "--etcd-cert",
                ca,
                "--etcd-key",
                missing
            },
            {
                "--etcd-password-file names a file that does not exist or is not readable: '" + missing
                        + "' (env FENCELINE_ETCD_PASSWORD_FILE)",
                "--etcd-user",
                "app",
                "--etcd-password-file",
                missing
            },
            {
                "--etcd-cert and --etcd-key go together",
                "--etcd",
                "https://127.0.0.1:2379",
                "--etcd-ca",
                ca,
                "--etcd-cert",
                ca
            },
            {"--etcd-user and --etcd-password-file go together", "--etcd-user", "app"},
            {"--etcd https:// endpoints need --etcd-ca", "--etcd", "https://127.0.0.1:2379"},
            {"--etcd-ca needs https:// endpoints", "--etcd", "127.0.0.1:2379", "--etcd-ca", ca},
        };
        for (String cmd : new String[] {"status", "pause", "resume", "resign", "worker"}) {
            for (String[] row : rows) {
                java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of(cmd));
                args.addAll(java.util.List.of(row).subList(1, row.length));
                args.addAll(java.util.List.of("--jdbc-url", "jdbc:postgresql://127.0.0.1:1/none"));
                Run r = run(args.toArray(String[]::new));
                assertThat(r.exit()).as(args.toString()).isEqualTo(2);
                assertThat(r.err()).as(args.toString()).contains(row[0]).contains("Nothing was changed");
            }
        }
    }

    @Test
    void malformedElectionNameIsRefused() {
        Run r = run("status", "--election", "Bad Name");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("--election must match");
    }

    @Test
    void unknownOptionsAndMissingCommandsGiveUsageErrors() {
        assertThat(run("seed", "--paymnts", "5").exit()).isEqualTo(2);
        assertThat(run("seed").err()).contains("--payments");
        assertThat(run().exit()).isEqualTo(2);
        assertThat(run("audit").err()).contains("rejected or terms");
        assertThat(run("audit", "rejected", "--format", "xml").err())
                .contains("--format must be one of table, json, csv");
        assertThat(run("audit", "rejected", "--since", "yesterday").err()).contains("--since must be an ISO-8601");
        assertThat(run("worker", "--ttl-ms", "2500").err()).contains("--ttl-ms must be whole seconds");
        assertThat(run("worker", "--batch-size", "0").exit()).isEqualTo(2);
        // The writer has one mode for every deployment: an option to choose one is unknown.
        assertThat(run("worker", "--enter-scope", "transaction").exit()).isEqualTo(2);
    }

    @Test
    void everyCommandHasHelp() {
        for (String cmd :
                new String[] {"migrate", "seed", "worker", "status", "resign", "pause", "resume", "verify", "demo"}) {
            Run r = run(cmd, "--help");
            assertThat(r.exit()).as(cmd).isZero();
            assertThat(r.out()).as(cmd).contains("Usage: fenceline " + cmd);
        }
        assertThat(run("audit", "rejected", "--help").out()).contains("--since").contains("--format");
        assertThat(run("audit", "terms", "--help").exit()).isZero();
        assertThat(run("--help").out()).contains("demo").contains("FENCELINE_JDBC_URL");
    }

    @Test
    void commonOptionsDocumentTheirEnvironmentVariables() {
        String help = run("status", "--help").out();
        assertThat(help)
                .contains("FENCELINE_JDBC_URL")
                .contains("FENCELINE_ETCD")
                .contains("FENCELINE_ELECTION");
    }
}
