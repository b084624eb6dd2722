package dev.fenceline.election;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.election.internal.DefaultElectionSession;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.EtcdMember;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.maintenance.StatusResponse;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One etcd member misbehaving while the quorum is intact: a stopped member must not make the leader flap,
 * a hung member carrying the followers' watch must not delay failover, and every renewal is one request.
 * Assertions are on behaviour; the timings of the same faults are rows of the election benchmark.
 */
@ExtendWith(EtcdClusterExtension.class)
class MemberFaultIT {
    private static final Logger log = LoggerFactory.getLogger(MemberFaultIT.class);
    private static final AtomicInteger SEQ = new AtomicInteger();
    static EtcdCluster cluster;

    @BeforeAll
    static void useCluster(EtcdCluster c) {
        cluster = c;
    }

    private static String electionName(String base) {
        return base + "-" + SEQ.incrementAndGet();
    }

    /** etcd's own count of lease renewals it applied, over all members (only the raft leader counts). */
    private static long etcdRenewals() throws IOException, InterruptedException {
        HttpClient http =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long sum = 0;
        for (EtcdMember m : cluster.members()) {
            if (!m.isRunning() || m.isPaused()) {
                continue;
            }
            String body = http.send(
                            HttpRequest.newBuilder(URI.create(m.clientEndpoint() + "/metrics"))
                                    .timeout(Duration.ofSeconds(2))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString())
                    .body();
            for (String line : body.split("\n")) {
                if (line.startsWith("etcd_debugging_lease_renewed_total ")) {
                    sum += (long) Double.parseDouble(
                            line.substring(line.indexOf(' ') + 1).trim());
                }
            }
        }
        return sum;
    }

    /** A member that is not the raft leader (pausing the raft leader would cost a raft election, a real blip). */
    private static EtcdMember nonRaftLeader() throws Exception {
        for (EtcdMember m : cluster.members()) {
            try (Client c = Client.builder().endpoints(m.clientEndpoint()).build()) {
                StatusResponse s = c.getMaintenanceClient()
                        .statusMember(m.clientEndpoint())
                        .get(5, TimeUnit.SECONDS);
                if (s.getLeader() != s.getHeader().getMemberId()) {
                    return m;
                }
            }
        }
        throw new IllegalStateException("every member claims to be the raft leader");
    }

    private static EtcdMember memberServing(String endpoint) {
        return cluster.members().stream()
                .filter(m -> m.clientEndpoint().equals(endpoint))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no member serves " + endpoint));
    }

    @Test
    void everyRenewalIsOneKeepAliveRequest() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        ElectionConfig cfg = ElectionConfig.builder()
                .endpoints(cluster.endpoints())
                .ttl(Duration.ofSeconds(2))
                .closeOnShutdown(false)
                .meterRegistry(meters)
                .build();
        try (ElectionSession s = ElectionSession.open(cfg)) {
            Timer confirmed = meters.get("fenceline.election.lease.renew.rtt").timer();
            await().atMost(Duration.ofSeconds(10)).until(() -> confirmed.count() >= 2);
            Counter sent = meters.get("fenceline.election.etcd.requests")
                    .tag("op", "lease_keepalive")
                    .counter();
            long etcd0 = etcdRenewals();
            double sent0 = sent.count();
            long confirmed0 = confirmed.count();
            await().atMost(Duration.ofSeconds(30)).until(() -> confirmed.count() >= confirmed0 + 20);
            double sent1 = sent.count();
            long etcd1 = etcdRenewals();
            long ours = Math.round(sent1 - sent0);
            log.info("renewals in the window: sent={} etcd_applied={}", ours, etcd1 - etcd0);
            // one renewal may be in flight at either end of the window; a second request per renewal would double it
            assertThat(etcd1 - etcd0)
                    .as("renewals etcd applied for %d renewal requests we sent", ours)
                    .isBetween(ours - 2, ours + 2);
        }
    }

    @Test
    void stoppedMemberCausesNoSuspect() throws Exception {
        EtcdMember victim = nonRaftLeader();
        // the victim first: the session's renewals and reads start on it, so the fault is on their path
        List<String> endpoints = new ArrayList<>();
        endpoints.add(victim.clientEndpoint());
        cluster.endpoints().stream()
                .filter(e -> !e.equals(victim.clientEndpoint()))
                .forEach(endpoints::add);
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        ElectionConfig cfg = ElectionConfig.builder()
                .endpoints(endpoints)
                .ttl(Duration.ofSeconds(2))
                .closeOnShutdown(false)
                .meterRegistry(meters)
                .build();
        String name = electionName("stopped-member");
        try (Candidate l = Candidate.started(cfg, name, "l")) {
            l.election.awaitLeadership(Duration.ofSeconds(10));
            Timer confirmed = meters.get("fenceline.election.lease.renew.rtt").timer();
            victim.pause();
            try {
                long c0 = confirmed.count();
                int window = 20; // renewals with one member stopped
                await().atMost(Duration.ofSeconds(60)).until(() -> confirmed.count() >= c0 + window);
                double failuresOnVictim = meters
                        .find("fenceline.election.lease.keepalive.failures")
                        .tag("endpoint", victim.clientEndpoint())
                        .counters()
                        .stream()
                        .mapToDouble(Counter::count)
                        .sum();
                log.info(
                        "stopped member {}: {} renewals confirmed, {} failed on it, events {}",
                        victim,
                        confirmed.count() - c0,
                        failuresOnVictim,
                        l.events.stream().map(ElectionEvent::state).toList());
                assertThat(failuresOnVictim)
                        .as("renewals that hit the stopped member (the fault was on the path)")
                        .isGreaterThanOrEqualTo(1);
                assertThat(l.eventsTo(LeadershipState.SUSPECT))
                        .as("SUSPECT transitions with one member stopped")
                        .isEmpty();
                assertThat(l.state()).isEqualTo(LeadershipState.LEADER);
                assertThat(l.isValidLeader()).isTrue();
            } finally {
                victim.resume();
            }
        }
    }

    @Test
    void successorElectedWhileTheMemberCarryingItsWatchIsHung() throws Exception {
        String name = electionName("hung-watch");
        ElectionConfig cfg = ElectionConfig.builder()
                .endpoints(cluster.endpoints())
                .ttl(Duration.ofSeconds(2))
                .closeOnShutdown(false)
                .meterRegistry(new SimpleMeterRegistry())
                .build();
        try (Candidate a = Candidate.started(cfg, name, "a")) {
            Leadership la = a.election.awaitLeadership(Duration.ofSeconds(10));
            try (Candidate b = Candidate.started(cfg, name, "b")) {
                await().atMost(Duration.ofSeconds(10)).until(() -> b.state() == LeadershipState.FOLLOWER);
                EtcdMember hung = memberServing(((DefaultElectionSession) b.session).watchEndpoint());
                hung.pause();
                try {
                    a.crash();
                    // Bounded wait: without liveness checks independent of the watch, the follower learned of the
                    // expiry only when gRPC keepalive gave up on the hung member (~38 s).
                    Leadership lb = b.election.awaitLeadership(Duration.ofSeconds(20));
                    assertThat(hung.isPaused())
                            .as("the member carrying the follower's watch is still hung")
                            .isTrue();
                    assertThat(lb.term()).isGreaterThan(la.term());
                    ElectionEvent won = b.eventsTo(LeadershipState.LEADER).get(0);
                    log.info(
                            "failover with the watch member {} hung: {} ms after the crash (ttl 2000 ms)",
                            hung,
                            TimeUnit.NANOSECONDS.toMillis(won.nanoTime() - a.crashedAtNanos));
                    assertThat(won.nanoTime())
                            .as("successor starts after the crashed leader's validity ended")
                            .isGreaterThan(la.validUntilNanos());
                } finally {
                    hung.resume();
                }
            }
        }
    }
}
