package dev.fenceline.sample.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import dev.fenceline.sample.demo.ChildProcess;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.EtcdMember;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * At start a worker waits for etcd as long as waiting can help (nothing listens, no quorum yet), and exits at once when
 * it cannot (the endpoint is not etcd): a misconfigured worker that retries silently looks like a healthy one that is
 * still waiting.
 */
@ExtendWith({PostgresExtension.class, EtcdClusterExtension.class})
class WorkerWaitsForEtcdIT {

    @Test
    void aWorkerStartedBeforeEtcdIsUpWaitsForItAndSettlesOnceItIs(TestDatabase db, EtcdCluster etcd) throws Exception {
        try (SampleProcesses s = new SampleProcesses(db, etcd, "etcd-later")) {
            assertThat(s.cli("migrate").exit()).isZero();
            assertThat(s.cli("seed", "--payments", "300").exit()).isZero();
            etcd.members().forEach(EtcdMember::kill);
            try {
                ChildProcess w = s.startWorker("w1", "--ttl-ms", "3000", "--batch-size", "50", "--interval-ms", "50");
                await("the worker reports it is waiting for etcd")
                        .atMost(Duration.ofSeconds(60))
                        .pollInterval(Duration.ofMillis(100))
                        .until(() -> w.stderrText().contains("cannot reach etcd yet") || !w.isAlive());
                assertThat(w.isAlive())
                        .as("the worker exited instead of waiting:\n" + w.stderrText())
                        .isTrue();
            } finally {
                etcd.members().forEach(EtcdMember::restart);
            }
            etcd.awaitHealthy(Duration.ofSeconds(30));
            s.awaitAllSettledByThenVerify("w1");
        }
    }

    /** An HTTP server where etcd should be answers in a way no amount of waiting changes: exit 1 at once, saying why. */
    @Test
    void aWorkerWhoseEtcdEndpointIsNotEtcdExitsAtOnceNamingTheEndpointAndWhatToCheck(TestDatabase db, EtcdCluster etcd)
            throws Exception {
        HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        http.createContext("/", x -> {
            x.sendResponseHeaders(404, -1);
            x.close();
        });
        http.start();
        String endpoint = "http://127.0.0.1:" + http.getAddress().getPort();
        try (SampleProcesses s = new SampleProcesses(db, etcd, "etcd-not-etcd")) {
            assertThat(s.cli("migrate").exit()).isZero();
            ChildProcess w = s.startWorkerWithEtcd(endpoint, "w1", "--ttl-ms", "3000");
            await("the worker exits or retries")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> !w.isAlive() || w.stderrText().contains("retrying"));
            assertThat(w.stderrText()).doesNotContain("retrying");
            assertThat(w.waitFor(Duration.ofSeconds(30))).as(w.stderrText()).isEqualTo(1);
            assertThat(w.stderrText())
                    .contains("etcd at [" + endpoint + "] cannot be used")
                    .contains("not retried")
                    .contains("not an etcd client URL")
                    .contains("--etcd for the endpoints");
        } finally {
            http.stop(0);
        }
    }
}
