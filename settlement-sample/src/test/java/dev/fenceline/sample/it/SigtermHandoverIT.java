package dev.fenceline.sample.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.sample.demo.ChildProcess;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** SIGTERM on the leader: it stops taking batches, finishes the current one, resigns and exits 0; another worker takes over. */
@ExtendWith({PostgresExtension.class, EtcdClusterExtension.class})
class SigtermHandoverIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void sigtermedLeaderFinishesItsBatchResignsAndExitsZeroAndAnotherWorkerTakesOver(TestDatabase db, EtcdCluster etcd)
            throws Exception {
        try (SampleProcesses s = new SampleProcesses(db, etcd, "sigterm");
                ElectionAdmin admin = s.admin()) {
            assertThat(s.cli("migrate").exit()).isZero();
            assertThat(s.cli("seed", "--payments", "4000").exit()).isZero();
            // a long TTL: a takeover before it runs out can only come from the resignation
            s.startWorker("w1", "--ttl-ms", "10000", "--batch-size", "20", "--interval-ms", "50");
            s.startWorker("w2", "--ttl-ms", "10000", "--batch-size", "20", "--interval-ms", "50");
            AtomicReference<LeaderRecord> first = new AtomicReference<>();
            await("a leader")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> SampleProcesses.leader(admin)
                            .map(r -> {
                                first.set(r);
                                return true;
                            })
                            .orElse(false));
            await("the leader to settle")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> s.batchesOfTerm(first.get().term()) >= 3);

            ChildProcess leader = s.worker(first.get().leaderId());
            long t0 = System.nanoTime();
            leader.signal("TERM");
            Integer exit = leader.waitFor(Duration.ofSeconds(30));
            System.out.printf(
                    "%s exited %s %.0f ms after SIGTERM (TTL 10000 ms)%n",
                    leader.name(), exit, (System.nanoTime() - t0) / 1e6);
            assertThat(exit).as(leader.stderrText()).isZero();

            AtomicReference<LeaderRecord> next = new AtomicReference<>();
            await("the other worker to take over")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> SampleProcesses.leader(admin)
                            .filter(r -> r.term() > first.get().term())
                            .map(r -> {
                                next.set(r);
                                return true;
                            })
                            .orElse(false));
            assertThat(next.get().leaderId()).isNotEqualTo(leader.name());
            await("the new leader to settle")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> s.batchesOfTerm(next.get().term()) >= 1);

            // the resigned worker's history: every batch it started ended (none abandoned mid-way), then "stop" for
            // SIGTERM
            List<JsonNode> events = new ArrayList<>();
            for (String line : Files.readAllLines(s.history(leader.name()))) {
                events.add(JSON.readTree(line));
            }
            long starts = events.stream()
                    .filter(e -> e.path("event").asText().equals("batch")
                            && e.path("phase").asText().equals("start"))
                    .count();
            long ends = events.stream()
                    .filter(e -> e.path("event").asText().equals("batch")
                            && e.path("phase").asText().equals("end"))
                    .count();
            assertThat(ends).isEqualTo(starts);
            assertThat(events.stream()
                            .filter(e -> e.path("event").asText().equals("batch")
                                    && e.path("phase").asText().equals("end"))
                            .map(e -> e.path("outcome").asText()))
                    .containsOnly("committed");
            int stop = -1;
            for (int i = 0; i < events.size(); i++) {
                if (events.get(i).path("event").asText().equals("stop")) {
                    stop = i;
                }
            }
            assertThat(stop).as("a stop event").isNotNegative();
            assertThat(events.get(stop).path("reason").asText()).isEqualTo("SIGTERM");
            assertThat(events.subList(stop, events.size()))
                    .noneMatch(e -> e.path("event").asText().equals("batch"));

            s.stopWorkers();
            SampleProcesses.Result verify = s.cliWithHistories("verify");
            assertThat(verify.exit()).as(verify.stdout() + verify.stderr()).isZero();
        }
    }
}
