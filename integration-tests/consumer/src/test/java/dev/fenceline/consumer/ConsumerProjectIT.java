package dev.fenceline.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.migrations.FencingMigrations;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A throwaway consumer project ({@code src/test/consumer-project}) that depends only on Fenceline's published
 * artifacts — installed by this module's build into the consumer's own local repository, third-party artifacts
 * served from the main build's local repository or Maven Central — is built with Maven and runs the README's
 * example against a real PostgreSQL and a real 3-member etcd.
 */
class ConsumerProjectIT {
    private static final int PAYMENTS = 250;
    private static final long BUILD_TIMEOUT_MINUTES = 8;
    private static final long RUN_TIMEOUT_MINUTES = 3;

    private static TestDatabase database;
    private static EtcdCluster etcd;

    @BeforeAll
    static void servers() {
        database = PostgresServer.shared().createDatabase("consumer");
        etcd = EtcdCluster.start(3);
    }

    @AfterAll
    static void stop() {
        if (etcd != null) {
            etcd.close();
        }
        if (database != null) {
            database.close();
        }
    }

    @Test
    void theReadmeExampleBuildsFromThePublishedArtifactsAndSettlesEveryPaymentInFencedTransactions() throws Exception {
        // The application's own migration: its table, protected after the fencing schema exists.
        FencingMigrations.migrate(database.dataSource());
        try (Connection c = database.server().superuserConnection(database.name());
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE payment (id bigint PRIMARY KEY, status text NOT NULL)");
            s.execute("INSERT INTO payment SELECT g, 'PENDING' FROM generate_series(1, " + PAYMENTS + ") g");
            s.execute("SELECT fencing.protect_table('payment'::regclass, 'settlement')");
        }

        Path project = copyProject();
        Path classpath = project.resolve("classpath.txt");
        run(
                project,
                BUILD_TIMEOUT_MINUTES,
                Map.of(),
                maven(),
                "-B",
                "-ntp",
                "-q",
                "-s",
                settings(project).toString(),
                "-Dmaven.repo.local=" + System.getProperty("fenceline.consumer.repo"),
                "-Dfenceline.version=" + System.getProperty("fenceline.version"),
                "compile",
                "dependency:build-classpath",
                "-Dmdep.outputFile=" + classpath);
        String cp = project.resolve("target/classes")
                + java.io.File.pathSeparator
                + Files.readString(classpath).strip();

        String output = run(
                project,
                RUN_TIMEOUT_MINUTES,
                Map.of(
                        "JDBC_URL", database.jdbcUrl(),
                        "DB_USER", database.user(),
                        "DB_PASSWORD", database.password() == null ? "" : database.password(),
                        "FENCELINE_ETCD", etcd.endpointsCsv()),
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                cp,
                "example.SettleWhileLeader");

        assertThat(output).contains("settled 100 payments at term 1");
        try (Connection c = database.server().superuserConnection(database.name());
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FILTER (WHERE status = 'SETTLED' AND fencing_term = 1), "
                        + "count(*), (SELECT count(*) FROM fencing.rejected_write) FROM payment")) {
            rs.next();
            assertThat(rs.getLong(1))
                    .as("payments settled at term 1, stamped with it")
                    .isEqualTo(PAYMENTS);
            assertThat(rs.getLong(2)).isEqualTo(PAYMENTS);
            assertThat(rs.getLong(3)).as("rejected writes").isZero();
        }
    }

    private static Path copyProject() throws IOException {
        Path source = Path.of("src/test/consumer-project").toAbsolutePath();
        Path target = Path.of(System.getProperty("fenceline.consumer.work", "target/consumer-work"))
                .toAbsolutePath()
                .resolve("settle-while-leader-" + System.nanoTime());
        try (Stream<Path> files = Files.walk(source)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                Path to = target.resolve(source.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(to);
                } else {
                    Files.copy(p, to, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
        return target;
    }

    /**
     * Fenceline's artifacts come only from the consumer's local repository (installed by this build); everything
     * else from the main build's local repository (releases only, read as a file repository) or Maven Central.
     */
    private static Path settings(Path project) throws IOException {
        String mainRepo =
                Path.of(System.getProperty("fenceline.main.repo")).toUri().toString();
        String repo = "<id>main-build</id><url>" + mainRepo + "</url>"
                + "<releases><enabled>true</enabled></releases><snapshots><enabled>false</enabled></snapshots>";
        Path settings = project.resolve("settings.xml");
        Files.writeString(
                settings,
                "<settings><profiles><profile><id>main-build</id>"
                        + "<repositories><repository>" + repo + "</repository></repositories>"
                        + "<pluginRepositories><pluginRepository>" + repo + "</pluginRepository></pluginRepositories>"
                        + "</profile></profiles><activeProfiles><activeProfile>main-build</activeProfile></activeProfiles></settings>");
        return settings;
    }

    private static String maven() {
        String home = System.getProperty("maven.home");
        if (home != null && Files.isExecutable(Path.of(home, "bin", "mvn"))) {
            return Path.of(home, "bin", "mvn").toString();
        }
        return "mvn";
    }

    /** Runs a command to completion within the timeout (killing it and its children otherwise); fails on exit != 0. */
    private static String run(Path dir, long timeoutMinutes, Map<String, String> env, String... command)
            throws IOException, InterruptedException {
        Path log = Files.createTempFile(dir, "run-", ".log");
        ProcessBuilder pb = new ProcessBuilder(List.of(command))
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        try {
            if (!p.waitFor(timeoutMinutes, TimeUnit.MINUTES)) {
                throw new AssertionError(String.join(" ", command) + " did not finish within " + timeoutMinutes
                        + " min; output:\n" + Files.readString(log));
            }
        } finally {
            if (p.isAlive()) {
                List<ProcessHandle> tree = new ArrayList<>(p.descendants().toList());
                tree.forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
        }
        String output = Files.readString(log);
        assertThat(p.exitValue())
                .as("exit of %s; output:%n%s", String.join(" ", command), output)
                .isZero();
        return output;
    }
}
