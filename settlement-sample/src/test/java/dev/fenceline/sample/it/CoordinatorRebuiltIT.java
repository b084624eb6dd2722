package dev.fenceline.sample.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.nio.file.Files;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * etcd wiped and re-created while the database keeps its mark: the new cluster's term counter restarts below the
 * mark, and the running workers must not wedge — the winner raises the term floor above the mark, resigns, and the
 * next term settles again.
 */
@ExtendWith({PostgresExtension.class, EtcdClusterExtension.class})
class CoordinatorRebuiltIT {
    @Test
    void workersRaiseTheTermFloorAboveTheDatabaseMarkAfterEtcdIsRebuiltFromNothing(TestDatabase db, EtcdCluster etcd)
            throws Exception {
        try (SampleProcesses s = new SampleProcesses(db, etcd, "rebuild")) {
            assertThat(s.cli("migrate").exit()).isZero();
            assertThat(s.cli("seed", "--payments", "6000").exit()).isZero();
            try (ElectionAdmin admin = s.admin()) {
                admin.ensureTermAtLeast(SampleProcesses.ELECTION, 5);
            }
            s.startWorker("w1", "--ttl-ms", "3000", "--batch-size", "10", "--interval-ms", "50");
            s.startWorker("w2", "--ttl-ms", "3000", "--batch-size", "10", "--interval-ms", "50");
            await("settling under term 5")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> s.batchesOfTerm(5) >= 2);
            long mark = s.scalar("SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = 'settlement'");
            assertThat(mark).isEqualTo(5);

            etcd.rebuild(); // every member killed and wiped; a new cluster on the same ports: term counter back to 0
            System.out.println("etcd rebuilt; settled so far: " + s.settled());

            await("a term above the old mark settles")
                    .atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> s.scalar("SELECT count(*) FROM settlement.settlement_batch WHERE term > 5") >= 1);
            assertThat(Files.readString(s.history("w1")) + Files.readString(s.history("w2")))
                    .contains("\"event\":\"term_floor\"");

            await("drained")
                    .atMost(Duration.ofSeconds(120))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> s.pending() == 0);
            s.stopWorkers();
            SampleProcesses.Result verify = s.cliWithHistories("verify");
            System.out.println(verify.stdout());
            assertThat(verify.exit()).as(verify.stdout() + verify.stderr()).isZero();
        }
    }
}
