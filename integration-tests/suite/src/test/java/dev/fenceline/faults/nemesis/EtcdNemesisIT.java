package dev.fenceline.faults.nemesis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.Processes;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The etcd-side faults against a real 3-member cluster: minority partition through peer proxies, client proxy. */
class EtcdNemesisIT {
    private static EtcdCluster cluster;
    private static PeerPartition partition;

    @BeforeAll
    static void start() {
        cluster = EtcdCluster.start(3);
        partition = PeerPartition.install(cluster);
    }

    @AfterAll
    static void stop() {
        if (partition != null) {
            partition.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    private static boolean put(String endpoint, String key, String value) {
        Processes.Result r =
                cluster.etcdctlResult(endpoint, Duration.ofSeconds(10), "--command-timeout=3s", "put", key, value);
        return r.ok();
    }

    @Test
    void peerTrafficFlowsThroughTheProxiesAttributedToMembers() {
        await().atMost(Duration.ofSeconds(20))
                .untilAsserted(() -> assertThat(partition.connectionOrigins().values())
                        .allSatisfy(origins -> assertThat(origins).isNotEmpty().doesNotContainNull()));
    }

    @Test
    void isolatedMemberLosesItsLeaderWhileTheMajorityKeepsServing() {
        String victim = cluster.member(0).name();
        partition.isolate(victim);
        try {
            await().atMost(Duration.ofSeconds(20)).until(() -> !cluster.isHealthy(cluster.member(0)));
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> cluster.isHealthy(cluster.member(1)) && cluster.isHealthy(cluster.member(2)));
            assertThat(put(cluster.member(1).clientEndpoint(), "/t/majority", "ok"))
                    .isTrue();
            assertThat(put(cluster.member(0).clientEndpoint(), "/t/minority", "no"))
                    .isFalse();
        } finally {
            partition.heal();
        }
        await().atMost(Duration.ofSeconds(30))
                .until(() -> cluster.members().stream().allMatch(cluster::isHealthy));
        assertThat(put(cluster.member(0).clientEndpoint(), "/t/after", "ok")).isTrue();
    }

    @Test
    void clientProxyBlackholeMakesEtcdUnreachableUntilHealed() {
        try (TcpProxy p =
                TcpProxy.start("client", TcpProxy.loopback(cluster.member(1).clientPort()))) {
            assertThat(put(p.endpoint(), "/t/p", "1")).isTrue();
            p.blackhole();
            assertThat(put(p.endpoint(), "/t/p", "2")).isFalse();
            p.heal();
            assertThat(put(p.endpoint(), "/t/p", "3")).isTrue();
        }
    }
}
