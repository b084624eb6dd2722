package dev.fenceline.sample.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.sample.demo.ChildProcess;
import dev.fenceline.sample.worker.Worker;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Three real worker processes settle 20 000 payments while the leader is killed with kill -9 midway and its
 * successor is frozen with SIGSTOP inside a batch (updates written, not committed) for longer than its TTL and then
 * resumed — its stale batch is rejected by PostgreSQL and audited. Afterwards {@code fenceline verify}
 * (cross-checking the workers' history files) passes and every payment is settled exactly once.
 */
@ExtendWith({PostgresExtension.class, EtcdClusterExtension.class})
class SettlementEndToEndIT {
    private static final int PAYMENTS = 20_000;

    @Test
    void threeWorkersSettleEveryPaymentExactlyOnceThroughAKillAndAFreezeOfTheLeader(TestDatabase db, EtcdCluster etcd)
            throws Exception {
        try (SampleProcesses s = new SampleProcesses(db, etcd, "e2e");
                ElectionAdmin admin = s.admin()) {
            assertThat(s.cli("migrate").exit()).isZero();
            assertThat(s.cli("seed", "--payments", Integer.toString(PAYMENTS)).exit())
                    .isZero();
            for (String id : new String[] {"w1", "w2", "w3"}) {
                s.startWorker(
                        id,
                        "--ttl-ms",
                        "3000",
                        "--batch-size",
                        "100",
                        "--interval-ms",
                        "20",
                        "--debug-pause-inside-batch-file",
                        s.dir.resolve(id + ".pause").toString());
            }

            // 1. a leader settles; kill -9 it midway
            AtomicReference<LeaderRecord> first = new AtomicReference<>();
            await("a first leader")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> SampleProcesses.leader(admin)
                            .map(r -> {
                                first.set(r);
                                return true;
                            })
                            .orElse(false));
            await("the first leader to settle a quarter")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> s.settled() >= PAYMENTS / 4);
            ChildProcess killed = s.worker(first.get().leaderId());
            killed.signal("KILL");
            System.out.printf(
                    "kill -9 %s (term %d) at %d settled%n",
                    killed.name(), first.get().term(), s.settled());

            // 2. a successor with a higher term settles
            AtomicReference<LeaderRecord> second = new AtomicReference<>();
            await("a successor with a higher term")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> SampleProcesses.leader(admin)
                            .filter(r -> r.term() > first.get().term())
                            .map(r -> {
                                second.set(r);
                                return true;
                            })
                            .orElse(false));
            assertThat(second.get().leaderId()).isNotEqualTo(first.get().leaderId());
            await("the successor to commit")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> s.batchesOfTerm(second.get().term()) >= 2);

            // 3. freeze the successor INSIDE a batch (updates written, not committed) for longer than its TTL
            //    (until a third leader has taken over and committed), then resume it: its batch must be rejected
            ChildProcess frozen = s.worker(second.get().leaderId());
            Path pause = s.dir.resolve(frozen.name() + ".pause");
            Files.writeString(pause, "pause");
            assertThat(frozen.awaitLine(l -> l.startsWith(Worker.PAUSE_MARKER), Duration.ofSeconds(30)))
                    .as("the successor reached the pause point inside a batch")
                    .isNotNull();
            frozen.signal("STOP");
            Files.delete(pause); // once resumed, it goes on to commit
            System.out.printf(
                    "SIGSTOP %s (term %d) inside a batch at %d settled%n",
                    frozen.name(), second.get().term(), s.settled());
            AtomicReference<LeaderRecord> third = new AtomicReference<>();
            await("a third leader")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> SampleProcesses.leader(admin)
                            .filter(r -> r.term() > second.get().term())
                            .map(r -> {
                                third.set(r);
                                return true;
                            })
                            .orElse(false));
            await("the third leader to commit")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> s.batchesOfTerm(third.get().term()) >= 1);
            frozen.signal("CONT");
            System.out.printf(
                    "SIGCONT %s; leader now %s (term %d)%n",
                    frozen.name(), third.get().leaderId(), third.get().term());
            await("the frozen leader's stale batch to be rejected and audited")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> s.scalar("SELECT count(*) FROM fencing.rejected_write " + "WHERE offered_term = "
                                    + second.get().term())
                            >= 1);

            // 4. drain, stop, verify
            await("all payments settled")
                    .atMost(Duration.ofSeconds(120))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> s.pending() == 0);
            assertThat(frozen.isAlive())
                    .as("the resumed worker keeps running as a follower")
                    .isTrue();
            s.stopWorkers();
            SampleProcesses.Result verify = s.cliWithHistories("verify");
            System.out.println(verify.stdout());
            assertThat(verify.exit()).as(verify.stdout() + verify.stderr()).isZero();
            assertThat(verify.stdout())
                    .startsWith("verify OK: all 20000 payments settled exactly once")
                    .contains("rejected attempt(s) in the history files, all matched");

            assertThat(s.settled()).isEqualTo(PAYMENTS);
            assertThat(s.scalar("SELECT sum(payment_count) FROM settlement.settlement_batch"))
                    .isEqualTo(PAYMENTS);
            assertThat(s.scalar("SELECT count(DISTINCT term) FROM settlement.settlement_batch"))
                    .isGreaterThanOrEqualTo(3);
            assertThat(s.scalar("SELECT count(*) FROM settlement.payment p JOIN settlement.settlement_batch b "
                            + "ON b.id = p.settlement_batch_id WHERE p.fencing_term <> b.term"))
                    .isZero();
        }
    }
}
