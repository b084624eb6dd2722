package dev.fenceline.election;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.election.internal.DefaultElectionSession;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * An etcd cluster rebuilt from nothing (all members wiped, new cluster on the same ports) starts its revisions
 * again at 1. Own class because {@link EtcdCluster#rebuild()} replaces the class's cluster.
 */
@ExtendWith(EtcdClusterExtension.class)
class CoordinatorRebuildIT {
    private static final Duration TTL = Duration.ofSeconds(2);

    @Test
    void followerTakesOverAfterCoordinatorRebuild(EtcdCluster cluster) throws Exception {
        ElectionConfig cfg = ElectionConfig.builder()
                .endpoints(cluster.endpoints())
                .ttl(TTL)
                .closeOnShutdown(false)
                .meterRegistry(new io.micrometer.core.instrument.simple.SimpleMeterRegistry())
                .build();
        Candidate a = Candidate.started(cfg, "rebuild", "a");
        Candidate b = null;
        try {
            await().atMost(Duration.ofSeconds(15)).until(a::isValidLeader);
            b = Candidate.started(cfg, "rebuild", "b");
            Candidate follower = b;
            await().atMost(Duration.ofSeconds(15)).until(() -> follower.state() == LeadershipState.FOLLOWER);

            // Raise the old cluster's revision far above anything the new cluster reaches during this test. The key
            // is under the watched prefix (no election has that name), so both sessions' watches see the revisions.
            long lastPut = 0;
            try (Client client = Client.builder()
                    .endpoints(cluster.endpoints().toArray(String[]::new))
                    .build()) {
                ByteSequence key = ByteSequence.from(cfg.keyPrefix() + "rebuild-noise/k", StandardCharsets.UTF_8);
                for (int i = 0; i < 200; i++) {
                    lastPut = client.getKVClient()
                            .put(key, ByteSequence.from(Integer.toString(i), StandardCharsets.UTF_8))
                            .get(5, TimeUnit.SECONDS)
                            .getHeader()
                            .getRevision();
                }
            }
            long oldRevision = lastPut;
            List<Candidate> both = List.of(a, b);
            await().atMost(Duration.ofSeconds(15))
                    .until(() -> both.stream()
                            .allMatch(c -> ((DefaultElectionSession) c.session).lastSeenRevision() >= oldRevision));
            Set<Long> oldLeases = Set.of(a.session.leaseId(), b.session.leaseId());

            cluster.rebuild();

            // Both old leases died with the old cluster: a leader on a new lease leads on the new cluster.
            Candidate[] leader = new Candidate[1];
            await().atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> {
                        leader[0] = both.stream()
                                .filter(c -> c.isValidLeader()
                                        && !oldLeases.contains(c.election
                                                .leadership()
                                                .orElseThrow()
                                                .leaseId()))
                                .findFirst()
                                .orElse(null);
                        return leader[0] != null;
                    });
            Candidate successor = leader[0] == a ? b : a;
            leader[0].crash();

            // Liveness expectation, not a benchmark: the successor sees the record vanish when the crashed leader's
            // lease expires (≈ TTL). Watching from a revision of the old cluster it would wait until the new
            // cluster's revision passed the old one, i.e. forever here.
            await().atMost(TTL.multipliedBy(10))
                    .pollInterval(Duration.ofMillis(10))
                    .until(successor::isValidLeader);
            assertThat(successor.election.leadership().orElseThrow().leaseId()).isNotIn(oldLeases);
        } finally {
            a.close();
            if (b != null) {
                b.close();
            }
        }
    }
}
