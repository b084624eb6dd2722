package dev.fenceline.faults.workload;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.faults.history.WorkerExit;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which worker exits are findings: stand-in processes (sh), no sample jar. */
class WorkerProcessTest {
    @TempDir
    Path dir;

    private WorkerProcess process(String id, String script) {
        return new WorkerProcess(
                id,
                List.of("sh", "-c", script),
                Map.of(),
                dir.resolve(id + ".history.jsonl"),
                dir.resolve(id + ".log"),
                1,
                dir.resolve(id + ".pause"));
    }

    private static void awaitEnded(WorkerProcess w) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (w.isAlive() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(w.isAlive()).as("the stand-in process ended").isFalse();
    }

    @Test
    void onlyAnEndedProcessTheRunnerDidNotEndAndNotYetReportedIsAFinding() {
        assertThat(WorkerProcess.isUnexpectedExit(true, false, false, false)).isTrue();
        assertThat(WorkerProcess.isUnexpectedExit(true, true, false, false))
                .as("still running (or frozen)")
                .isFalse();
        assertThat(WorkerProcess.isUnexpectedExit(true, false, true, false))
                .as("killed by a fault or stopped")
                .isFalse();
        assertThat(WorkerProcess.isUnexpectedExit(true, false, false, true))
                .as("already reported")
                .isFalse();
        assertThat(WorkerProcess.isUnexpectedExit(false, false, false, false))
                .as("never started")
                .isFalse();
    }

    @Test
    void aWorkerThatExitsOnItsOwnIsReportedOnceWithItsCodeAndLastLogLines() throws Exception {
        WorkerProcess w = process("w2", "echo starting; echo 'fatal: cannot go on' >&2; exit 3");
        w.start();
        awaitEnded(w);
        Optional<WorkerExit> exit = w.takeUnexpectedExit(20);
        assertThat(exit).hasValueSatisfying(e -> {
            assertThat(e.worker()).isEqualTo("w2");
            assertThat(e.exitCode()).isEqualTo(3);
            assertThat(e.lastLogLines()).contains("starting").contains("fatal: cannot go on");
            assertThat(e.at()).isNotNull();
        });
        assertThat(w.takeUnexpectedExit(20)).as("reported once").isEmpty();
        // restarted, it is watched afresh
        w.start();
        awaitEnded(w);
        assertThat(w.takeUnexpectedExit(1))
                .hasValueSatisfying(e -> assertThat(e.lastLogLines()).isEqualTo("fatal: cannot go on"));
        assertThat(Files.readAllLines(dir.resolve("w2.log"))).hasSize(4);
    }

    @Test
    void aWorkerAFaultKilledOrTheRunnerStoppedIsNoFinding() {
        WorkerProcess killed = process("w1", "exec sleep 60");
        killed.start();
        killed.kill9();
        assertThat(killed.isAlive()).isFalse();
        assertThat(killed.takeUnexpectedExit(20)).isEmpty();

        WorkerProcess stopped = process("w3", "exec sleep 60");
        stopped.start();
        stopped.stop(Duration.ofSeconds(5));
        assertThat(stopped.isAlive()).isFalse();
        assertThat(stopped.takeUnexpectedExit(20)).isEmpty();
    }
}
