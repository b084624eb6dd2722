package dev.fenceline.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Servers must not outlive a JVM that dies without running its shutdown hooks. */
class ReaperIT {

    @Test
    void serversOfAKilledJvmAreReaped() throws Exception {
        Path pidFile = Files.createTempFile("reaper-child-", ".pids");
        String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(
                        javaBin,
                        "-cp",
                        System.getProperty("java.class.path"),
                        ReaperChild.class.getName(),
                        pidFile.toString())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        try {
            await().atMost(Duration.ofSeconds(90))
                    .until(() -> Files.readString(pidFile).contains("ready"));
            List<Long> pids = Files.readAllLines(pidFile).stream()
                    .filter(l -> l.matches("\\d+"))
                    .map(Long::parseLong)
                    .toList();
            assertThat(pids).hasSize(4); // postmaster + 3 etcd members
            assertThat(pids).allMatch(Processes::isAlive);
            child.destroyForcibly(); // SIGKILL: no shutdown hooks run
            await().atMost(Duration.ofSeconds(30)).until(() -> pids.stream().noneMatch(Processes::isAlive));
        } finally {
            child.destroyForcibly();
            Files.deleteIfExists(pidFile);
        }
    }

    /** A JVM that starts PostgreSQL and etcd, reports their pids, and waits to be killed. */
    public static final class ReaperChild {
        public static void main(String[] args) throws Exception {
            PostgresServer pg = PostgresServer.start(PostgresServer.Options.defaults());
            EtcdCluster etcd = EtcdCluster.start(
                    EtcdCluster.Options.defaults().dataRoot(Path.of(System.getProperty("java.io.tmpdir"))));
            StringBuilder sb = new StringBuilder();
            sb.append(pg.pid()).append('\n');
            for (EtcdMember m : etcd.members()) {
                sb.append(m.pid()).append('\n');
            }
            sb.append("ready\n");
            Files.writeString(Path.of(args[0]), sb.toString());
            Thread.sleep(Duration.ofMinutes(5).toMillis());
        }
    }
}
