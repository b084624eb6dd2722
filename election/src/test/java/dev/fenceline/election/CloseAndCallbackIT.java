package dev.fenceline.election;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Closing elections with campaigns in doubt, where user-visible futures complete, and the version warning. */
@ExtendWith(EtcdClusterExtension.class)
class CloseAndCallbackIT {
    private static final Logger log = LoggerFactory.getLogger(CloseAndCallbackIT.class);
    private static final AtomicInteger SEQ = new AtomicInteger();
    static EtcdCluster cluster;

    @BeforeAll
    static void useCluster(EtcdCluster c) {
        cluster = c;
    }

    private static ElectionConfig.Builder config() {
        return ElectionConfig.builder()
                .endpoints(cluster.endpoints())
                .ttl(Duration.ofSeconds(2))
                .closeOnShutdown(false)
                .meterRegistry(new SimpleMeterRegistry());
    }

    @Test
    void closingTheSessionClosesItsDependentsNewestFirstWhileTheirTermIsStillValid() throws Exception {
        String name = "dependents-" + SEQ.incrementAndGet();
        List<String> order = new java.util.concurrent.CopyOnWriteArrayList<>();
        ElectionSession s = ElectionSession.open(config().build());
        LeaderElection e = s.election(name, "c");
        e.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> e.state() == LeadershipState.LEADER);
        Leadership held = e.leadership().orElseThrow();
        s.closeFirst(() -> order.add("first registered, valid=" + held.isValidNow()));
        s.closeFirst(() -> {
            order.add("second registered, valid=" + held.isValidNow());
            throw new IllegalStateException("a dependent that fails to close");
        });
        Runnable unregister = s.closeFirst(() -> order.add("unregistered"));
        unregister.run();
        unregister.run(); // idempotent

        s.close();

        assertThat(order).containsExactly("second registered, valid=true", "first registered, valid=true");
        assertThat(held.isValidNow()).isFalse();
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> s.closeFirst(() -> {})))
                .isInstanceOf(ElectionException.class)
                .hasMessageContaining("after the session was closed");
    }

    /**
     * With a 10 ms call timeout many campaigns end "outcome unknown" and some of those committed. Closing the
     * election must not leave such a record on the session's lease (which the open session keeps renewing:
     * nobody else could lead until the session closes).
     */
    @Test
    void closingWithCampaignsInDoubtLeavesNoRecordOnTheLiveLease() throws Exception {
        ElectionConfig cfg = config().callTimeout(Duration.ofMillis(10))
                .connectTimeout(Duration.ofSeconds(20))
                .build();
        String prefix = "doubt-" + SEQ.incrementAndGet() + "-";
        try (ElectionSession s = ElectionSession.open(cfg);
                Client probe = Client.builder()
                        .endpoints(cluster.endpoints().toArray(String[]::new))
                        .build()) {
            for (int i = 0; i < 30; i++) {
                LeaderElection e = s.election(prefix + i, "c");
                e.start();
                // close at different points of the campaign: right away, or once it is campaigning
                if (i % 2 == 1) {
                    await().atMost(Duration.ofSeconds(5))
                            .pollInterval(Duration.ofMillis(1))
                            .until(() -> e.state() != LeadershipState.LATENT);
                }
                e.close();
            }
            ByteSequence root = ByteSequence.from(cfg.keyPrefix() + prefix, StandardCharsets.UTF_8);
            List<String> leftover = new ArrayList<>();
            // bounded: late commits are removed when the session's watch sees them
            await().atMost(Duration.ofSeconds(15))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> {
                        leftover.clear();
                        for (KeyValue kv : probe.getKVClient()
                                .get(root, GetOption.builder().isPrefix(true).build())
                                .get(5, TimeUnit.SECONDS)
                                .getKvs()) {
                            String key = kv.getKey().toString(StandardCharsets.UTF_8);
                            if (key.endsWith("/leader") && kv.getLease() == s.leaseId()) {
                                leftover.add(key);
                            }
                        }
                        return leftover.isEmpty();
                    });
            assertThat(leftover)
                    .as("leader records of closed elections on the open session's lease")
                    .isEmpty();
        }
    }

    /**
     * A campaign whose outcome was unknown can commit after close() read the key (a request queued on a slow
     * member). Simulated deterministically: a record on the open session's lease appears for an election the
     * session closed. It must be deleted (it would block the election until the session ends).
     */
    @Test
    void lateCommitOfAClosedElectionsCampaignIsDeleted() throws Exception {
        ElectionConfig cfg = config().build();
        String name = "late-commit-" + SEQ.incrementAndGet();
        try (ElectionSession s = ElectionSession.open(cfg);
                Client probe = Client.builder()
                        .endpoints(cluster.endpoints().toArray(String[]::new))
                        .build()) {
            LeaderElection e = s.election(name, "c");
            e.start();
            e.close();
            ByteSequence key = ByteSequence.from(cfg.keys(name).leader(), StandardCharsets.UTF_8);
            probe.getKVClient()
                    .put(
                            key,
                            ByteSequence.from(
                                    "{\"leader_id\":\"c\",\"term\":1,\"lease_id\":" + s.leaseId()
                                            + ",\"nonce\":\"late\",\"metadata\":{},\"acquired_at\":\"2026-01-01T00:00:00Z\"}",
                                    StandardCharsets.UTF_8),
                            io.etcd.jetcd.options.PutOption.builder()
                                    .withLeaseId(s.leaseId())
                                    .build())
                    .get(5, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> probe.getKVClient()
                            .get(key)
                            .get(5, TimeUnit.SECONDS)
                            .getKvs()
                            .isEmpty());
            assertThat(s.leaseId()).as("the session is still open and renewing").isNotZero();
        }
    }

    @Test
    void lostAndResignFuturesCompleteOnTheListenerThread() throws Exception {
        try (ElectionSession s = ElectionSession.open(config().build())) {
            LeaderElection e = s.election("futures-" + SEQ.incrementAndGet(), "c");
            e.start();
            Leadership l = e.awaitLeadership(Duration.ofSeconds(10));
            AtomicReference<String> lostThread = new AtomicReference<>();
            AtomicReference<String> resignThread = new AtomicReference<>();
            CompletableFuture<Void> lostSeen =
                    l.lost().thenRun(() -> lostThread.set(Thread.currentThread().getName()));
            CompletableFuture<Void> resigned = e.resign();
            CompletableFuture<Void> resignSeen = resigned.thenRun(
                    () -> resignThread.set(Thread.currentThread().getName()));
            CompletableFuture.allOf(lostSeen, resignSeen).get(10, TimeUnit.SECONDS);
            log.info("lost() stage ran on {}, resign() stage on {}", lostThread.get(), resignThread.get());
            // stages chained before completion run on the completing thread: it must be the listener thread
            assertThat(lostThread.get()).startsWith("fenceline-listeners-");
            assertThat(resignThread.get())
                    .satisfiesAnyOf(
                            t -> assertThat(t).startsWith("fenceline-listeners-"),
                            t -> assertThat(t)
                                    .isEqualTo(Thread.currentThread().getName())); // already complete when chained
            assertThat(resignThread.get()).doesNotStartWith("fenceline-election-");
        }
    }

    @Test
    void closeFromInsideACallbackReturnsAndTheNextCandidateWins() throws Exception {
        String name = "self-close-" + SEQ.incrementAndGet();
        try (ElectionSession a = ElectionSession.open(config().build());
                ElectionSession b = ElectionSession.open(config().build())) {
            LeaderElection ea = a.election(name, "a");
            CountDownLatch closeReturned = new CountDownLatch(1);
            // a direct-executor listener runs on the election's own thread: a blocking close() there would wait
            // for work that thread has to do
            ea.addListener(
                    ev -> {
                        if (ev.state() == LeadershipState.LEADER) {
                            ea.close();
                            closeReturned.countDown();
                        }
                    },
                    Runnable::run);
            ea.start();
            assertThat(closeReturned.await(10, TimeUnit.SECONDS))
                    .as("close() inside the callback returned")
                    .isTrue();
            LeaderElection eb = b.election(name, "b");
            eb.start();
            eb.awaitLeadership(Duration.ofSeconds(10));
            assertThat(ea.state()).isEqualTo(LeadershipState.CLOSED);
        }
    }

    @Test
    void affectedEtcdVersionIsReportedByTheMetric() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (ElectionSession s =
                ElectionSession.open(config().meterRegistry(meters).build())) {
            double affected = meters.get("fenceline.election.etcd.lease.revocation.bug")
                    .gauge()
                    .value();
            String version = cluster.etcdctl("version");
            log.info(
                    "etcd {} -> members with the lease revocation bug: {}",
                    version.lines().findFirst().orElse("?"),
                    affected);
            boolean buggy =
                    version.contains("etcdctl version: 3.4.") && !version.matches("(?s).*3\\.4\\.(3\\d|[4-9]\\d).*");
            // the scripts install the same etcd-server and etcd-client package version
            assertThat(affected)
                    .as("members running etcd %s", version.lines().findFirst().orElse("?"))
                    .isEqualTo(buggy ? 3 : 0);
        }
    }
}
