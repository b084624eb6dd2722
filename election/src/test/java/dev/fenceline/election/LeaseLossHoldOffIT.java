package dev.fenceline.election;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code leaseLossHoldOff} against a real 3-member etcd: a record that vanished with its lease makes followers
 * wait out the old leader's deadline; a record given up voluntarily (resign, close) carries the resign marker and
 * is taken over at once.
 */
@ExtendWith(EtcdClusterExtension.class)
class LeaseLossHoldOffIT {
    private static final Logger log = LoggerFactory.getLogger(LeaseLossHoldOffIT.class);
    private static final AtomicInteger SEQ = new AtomicInteger();
    static EtcdCluster cluster;

    @BeforeAll
    static void useCluster(EtcdCluster c) {
        cluster = c;
    }

    private static final SimpleMeterRegistry METERS = new SimpleMeterRegistry();

    private static ElectionConfig config(Duration holdOff) {
        return ElectionConfig.builder()
                .endpoints(cluster.endpoints())
                .ttl(Duration.ofSeconds(2))
                .closeOnShutdown(false)
                .leaseLossHoldOff(holdOff)
                .meterRegistry(METERS)
                .build();
    }

    private static String electionName(String base) {
        return base + "-" + SEQ.incrementAndGet();
    }

    /** Vanished records this candidate waited out (its fenceline.election.lease.loss.holdoffs counter). */
    private static boolean waited(Candidate c) {
        return METERS.get("fenceline.election.lease.loss.holdoffs")
                        .tag("election", c.election.electionName())
                        .tag("candidate", c.id)
                        .counter()
                        .count()
                > 0;
    }

    @Test
    void aCrashedLeadersSuccessorWaitsTheHoldOffPastTheOldDeadline() throws Exception {
        String name = electionName("crash-holdoff");
        Duration holdOff = Duration.ofSeconds(3);
        ElectionConfig cfg = config(holdOff);
        try (Candidate a = Candidate.started(cfg, name, "a")) {
            Leadership la = a.election.awaitLeadership(Duration.ofSeconds(10));
            try (Candidate b = Candidate.started(cfg, name, "b")) {
                await().atMost(Duration.ofSeconds(10)).until(() -> b.state() == LeadershipState.FOLLOWER);
                long frozenDeadline = la.validUntilNanos();
                a.crash();
                Leadership lb = b.election.awaitLeadership(Duration.ofSeconds(30));
                ElectionEvent won = b.eventsTo(LeadershipState.LEADER).get(0);
                log.info(
                        "crash failover with leaseLossHoldOff {} ms: {} ms after the crash, {} ms after the old deadline",
                        holdOff.toMillis(),
                        TimeUnit.NANOSECONDS.toMillis(won.nanoTime() - a.crashedAtNanos),
                        TimeUnit.NANOSECONDS.toMillis(won.nanoTime() - frozenDeadline));
                assertThat(lb.term()).isGreaterThan(la.term());
                assertThat(waited(b))
                        .as("the successor waited out the old leader (counter)")
                        .isTrue();
                // the record went at some instant R >= the old leader's deadline + margin, the successor first saw it
                // gone at or after R and then waited the hold-off: without the hold-off it won ~0.7 s after the
                // deadline
                assertThat(won.nanoTime() - frozenDeadline)
                        .as("successor LEADER is at least leaseLossHoldOff after the old leader's frozen deadline")
                        .isGreaterThanOrEqualTo(holdOff.toNanos());
                assertThat(cluster.etcdctl("get", cfg.keys(name).resigned(), "--print-value-only")
                                .trim())
                        .as("no resign marker for a crashed term")
                        .isNotEqualTo(Long.toString(la.term()));
            }
        }
    }

    @Test
    void aResignWritesTheMarkerAndTheSuccessorDoesNotWait() throws Exception {
        String name = electionName("resign-holdoff");
        ElectionConfig cfg = config(Duration.ofSeconds(20));
        try (Candidate a = Candidate.started(cfg, name, "a")) {
            Leadership la = a.election.awaitLeadership(Duration.ofSeconds(10));
            try (Candidate b = Candidate.started(cfg, name, "b")) {
                await().atMost(Duration.ofSeconds(10)).until(() -> b.state() == LeadershipState.FOLLOWER);
                a.election.resign().get(10, TimeUnit.SECONDS);
                assertThat(cluster.etcdctl("get", cfg.keys(name).resigned(), "--print-value-only")
                                .trim())
                        .isEqualTo(Long.toString(la.term()));
                // the hold-off is 20 s: a successor within 15 s did not wait it (and its counter says so)
                Leadership lb = b.election.awaitLeadership(Duration.ofSeconds(15));
                assertThat(lb.term()).isGreaterThan(la.term());
                assertThat(waited(b)).as("no hold-off after a resign").isFalse();
            }
        }
    }

    @Test
    void closingTheSessionMarksItsTermsResignedSoTheSuccessorDoesNotWait() throws Exception {
        String name = electionName("close-holdoff");
        ElectionConfig cfg = config(Duration.ofSeconds(20));
        Candidate a = Candidate.started(cfg, name, "a");
        Leadership la = a.election.awaitLeadership(Duration.ofSeconds(10));
        try (Candidate b = Candidate.started(cfg, name, "b")) {
            await().atMost(Duration.ofSeconds(10)).until(() -> b.state() == LeadershipState.FOLLOWER);
            a.close(); // session close: each record deleted with its marker, then the lease revoked
            assertThat(cluster.etcdctl("get", cfg.keys(name).resigned(), "--print-value-only")
                            .trim())
                    .isEqualTo(Long.toString(la.term()));
            Leadership lb = b.election.awaitLeadership(Duration.ofSeconds(15));
            assertThat(lb.term()).isGreaterThan(la.term());
            assertThat(waited(b)).as("no hold-off after a session close").isFalse();
        }
    }
}
