package dev.fenceline.sample.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.sample.demo.ChildProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code java -jar fenceline.jar demo} runs green end to end and leaves nothing running. */
class DemoIT {
    @Test
    void demoShowsTheStaleWriteRejectedThenVerifiesAndLeavesNothingRunning() throws Exception {
        Path work = Files.createDirectories(Path.of("target", "it-work", "demo-" + System.currentTimeMillis())
                .toAbsolutePath());
        long t0 = System.nanoTime();
        try (ChildProcess demo = ChildProcess.start(
                "demo",
                List.of(
                        ChildProcess.javaBinary(),
                        "-jar",
                        SampleProcesses.jar(),
                        "demo",
                        "--work-dir",
                        work.toString()),
                work.resolve("demo.out"),
                null)) {
            Integer exit = demo.waitFor(Duration.ofMinutes(4));
            String out = demo.stdoutText();
            System.out.println(out);
            System.out.printf("demo took %.1f s%n", (System.nanoTime() - t0) / 1e9);
            assertThat(exit).as(out + "\n" + demo.stderrText()).isZero();
            assertThat(out)
                    .contains("leader elected: w")
                    .contains("STEP 1: freeze leader")
                    .contains("SIGSTOP sent")
                    .contains("new leader: w")
                    .contains("PostgreSQL REJECTED the stale write")
                    .contains("(its batch committed: no)")
                    .contains("verify: OK: all 2000 payments settled exactly once")
                    .contains("audit rejected")
                    .contains("summary:")
                    .contains("DEMO OK");
        }
        // nothing started by the demo survives it (workers and etcd members all ran with paths under the work dir)
        await("no process of the demo left")
                .atMost(Duration.ofSeconds(20))
                .until(() -> ProcessHandle.allProcesses()
                        .noneMatch(p -> p.info()
                                .commandLine()
                                .map(c -> c.contains(work.toString()))
                                .orElse(false)));
    }
}
