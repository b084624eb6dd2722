package dev.fenceline.election;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Election against a real 3-member etcd cluster. Every wait is on observable state (Awaitility); the only
 * sleeps are the durations of injected faults (members paused). Each test uses its own election name.
 */
@ExtendWith(EtcdClusterExtension.class)
class LeaderElectionIT {
    private static final Logger log = LoggerFactory.getLogger(LeaderElectionIT.class);
    private static final AtomicInteger SEQ = new AtomicInteger();
    static EtcdCluster cluster;

    @BeforeAll
    static void useCluster(EtcdCluster c) {
        cluster = c;
    }

    private static ElectionConfig.Builder config(Duration ttl) {
        return ElectionConfig.builder()
                .endpoints(cluster.endpoints())
                .ttl(ttl)
                .closeOnShutdown(false)
                .meterRegistry(new io.micrometer.core.instrument.simple.SimpleMeterRegistry());
    }

    private static String electionName(String base) {
        return base + "-" + SEQ.incrementAndGet();
    }

    private static Candidate awaitSingleLeader(List<Candidate> candidates, Duration atMost) {
        Candidate[] found = new Candidate[1];
        await().atMost(atMost).pollInterval(Duration.ofMillis(5)).until(() -> {
            List<Candidate> leaders = candidates.stream()
                    .filter(c -> !c.crashed && c.isValidLeader())
                    .toList();
            found[0] = leaders.size() == 1 ? leaders.get(0) : null;
            return found[0] != null;
        });
        return found[0];
    }

    @Test
    void everyCandidateObservesWhoLeadsAtWhichTermAndFollowsAHandover() throws Exception {
        ElectionConfig cfg = config(Duration.ofSeconds(2)).build();
        String name = electionName("observed");
        try (Candidate a = Candidate.started(cfg, name, "a");
                Candidate b = Candidate.started(cfg, name, "b")) {
            Candidate leader = awaitSingleLeader(List.of(a, b), Duration.ofSeconds(10));
            Candidate follower = leader == a ? b : a;
            long term = leader.election.leadership().orElseThrow().term();
            await().atMost(Duration.ofSeconds(5))
                    .until(() -> follower.election
                            .observedLeader()
                            .map(r -> r.leaderId().equals(leader.id) && r.term() == term)
                            .orElse(false));
            await().atMost(Duration.ofSeconds(5))
                    .until(() -> leader.election
                            .observedLeader()
                            .map(r -> r.leaderId().equals(leader.id)
                                    && "true".equals(r.metadata().get("test")))
                            .orElse(false));

            leader.election.resign().get(5, java.util.concurrent.TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> follower.election
                            .observedLeader()
                            .map(r -> r.leaderId().equals(follower.id) && r.term() > term)
                            .orElse(false));
            await().atMost(Duration.ofSeconds(5))
                    .until(() -> leader.election
                            .observedLeader()
                            .map(r -> r.leaderId().equals(follower.id))
                            .orElse(false));
        }
    }

    @Test
    void fiveCandidatesTwentyHandoversTermsStrictlyIncreasing() throws Exception {
        String name = electionName("handover");
        ElectionConfig cfg = config(Duration.ofSeconds(2)).build();
        CopyOnWriteArrayList<Candidate> all = new CopyOnWriteArrayList<>();
        CopyOnWriteArrayList<Candidate> live = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 5; i++) {
            Candidate c = Candidate.started(cfg, name, "c" + i);
            all.add(c);
            live.add(c);
        }
        List<Long> terms = new ArrayList<>();
        List<Long> resignHandoverMs = new ArrayList<>();
        List<Long> crashFailoverMs = new ArrayList<>();
        int next = 5;
        try (ValidityMonitor monitor = ValidityMonitor.of(all)) {
            for (int h = 0; h < 20; h++) {
                Candidate leader = awaitSingleLeader(live, Duration.ofSeconds(15));
                long term = leader.term();
                terms.add(term);
                long t0 = System.nanoTime();
                if (h % 2 == 0) {
                    leader.election.resign().get(5, TimeUnit.SECONDS);
                } else {
                    leader.crash();
                    live.remove(leader);
                    Candidate fresh = Candidate.started(cfg, name, "c" + next++);
                    all.add(fresh);
                    live.add(fresh);
                }
                Candidate successor = awaitSingleLeader(live, Duration.ofSeconds(15));
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                (h % 2 == 0 ? resignHandoverMs : crashFailoverMs).add(ms);
                assertThat(successor.term()).isGreaterThan(term);
            }
            terms.add(awaitSingleLeader(live, Duration.ofSeconds(15)).term());
            monitor.close();
            log.info(
                    "handovers done: terms={} resign_handover_ms={} crash_failover_ms={} validity_samples={}",
                    terms,
                    resignHandoverMs,
                    crashFailoverMs,
                    monitor.samples);
            assertThat(monitor.violations).as("instants with two valid leaders").isEmpty();
        } finally {
            for (Candidate c : all) {
                c.close();
            }
        }
        assertThat(terms).as("terms strictly increasing").isSorted().doesNotHaveDuplicates();
        assertNoOverlappingValidity(all);
    }

    /**
     * From the recorded events: each term's validity window [became LEADER, left LEADER or its deadline] must
     * end before the next term's window starts. A crashed leader's window ends at its frozen deadline.
     */
    static void assertNoOverlappingValidity(List<Candidate> candidates) {
        TreeMap<Long, long[]> windows = new TreeMap<>();
        for (Candidate c : candidates) {
            List<ElectionEvent> evs = new ArrayList<>(c.events);
            for (int i = 0; i < evs.size(); i++) {
                ElectionEvent e = evs.get(i);
                if (e.state() != LeadershipState.LEADER) {
                    continue;
                }
                long start = e.nanoTime();
                long end;
                if (i + 1 < evs.size()) {
                    end = Math.min(evs.get(i + 1).nanoTime(), e.leadership().validUntilNanos());
                } else {
                    end = e.leadership().validUntilNanos(); // crashed (frozen) or still leading
                }
                windows.merge(e.term(), new long[] {start, end}, (a, b) ->
                        new long[] {Math.min(a[0], b[0]), Math.max(a[1], b[1])});
            }
        }
        Map.Entry<Long, long[]> prev = null;
        for (Map.Entry<Long, long[]> w : windows.entrySet()) {
            if (prev != null) {
                assertThat(prev.getValue()[1])
                        .as("term %d validity ends before term %d starts", prev.getKey(), w.getKey())
                        .isLessThan(w.getValue()[0]);
            }
            prev = w;
        }
    }

    @Test
    void crashedLeaderIsReplaced() throws Exception {
        String name = electionName("crash");
        ElectionConfig cfg = config(Duration.ofSeconds(2)).build();
        try (Candidate a = Candidate.started(cfg, name, "a")) {
            Leadership la = a.election.awaitLeadership(Duration.ofSeconds(10));
            try (Candidate b = Candidate.started(cfg, name, "b")) {
                await().atMost(Duration.ofSeconds(10)).until(() -> b.state() == LeadershipState.FOLLOWER);
                long frozenDeadline = la.validUntilNanos();
                a.crash();
                Leadership lb = b.election.awaitLeadership(Duration.ofSeconds(10));
                ElectionEvent won = b.eventsTo(LeadershipState.LEADER).get(0);
                log.info(
                        "failover after crash: {} ms (ttl 2000 ms); successor became leader {} ms after the crashed "
                                + "leader's deadline",
                        TimeUnit.NANOSECONDS.toMillis(won.nanoTime() - a.crashedAtNanos),
                        TimeUnit.NANOSECONDS.toMillis(won.nanoTime() - frozenDeadline));
                assertThat(lb.term()).isGreaterThan(la.term());
                assertThat(won.nanoTime())
                        .as("successor starts after the crashed leader's validity ended")
                        .isGreaterThan(frozenDeadline);
                assertThat(la.isValidNow()).isFalse();
            }
        }
    }

    @Test
    void quorumBlipShorterThanTtlKeepsLeadership() throws Exception {
        String name = electionName("blip");
        ElectionConfig cfg = config(Duration.ofSeconds(6)).build();
        try (Candidate l = Candidate.started(cfg, name, "l")) {
            Leadership before = l.election.awaitLeadership(Duration.ofSeconds(10));
            try (Candidate f = Candidate.started(cfg, name, "f")) {
                await().atMost(Duration.ofSeconds(10)).until(() -> f.state() == LeadershipState.FOLLOWER);
                cluster.member(1).pause();
                cluster.member(2).pause();
                try {
                    Thread.sleep(3000); // the fault: quorum lost for 3 s (< TTL 6 s)
                } finally {
                    cluster.member(1).resume();
                    cluster.member(2).resume();
                }
                await().atMost(Duration.ofSeconds(15))
                        .pollInterval(Duration.ofMillis(20))
                        .until(() -> l.state() == LeadershipState.LEADER && l.isValidLeader());
                assertThat(l.term()).as("same term after the blip").isEqualTo(before.term());
                assertThat(l.eventsTo(LeadershipState.LOST)).as("no LOST").isEmpty();
                assertThat(f.eventsTo(LeadershipState.LEADER))
                        .as("follower never led")
                        .isEmpty();
                assertThat(before.lost()).isNotDone();
                log.info(
                        "blip: leader events {}",
                        l.events.stream()
                                .map(e -> e.state() + "(" + e.reason() + ")")
                                .toList());
                cluster.awaitHealthy(
                        Duration.ofSeconds(30)); // the resumed members may still be re-electing a Raft leader
                assertThat(cluster.etcdctl("get", cfg.keys(name).term(), "--print-value-only")
                                .trim())
                        .isEqualTo(Long.toString(before.term()));
            }
        }
    }

    @Test
    void quorumLossLongerThanTtlTurnsLeaderSuspectBeforeLeaseExpiry() throws Exception {
        String name = electionName("quorum-loss");
        Duration ttl = Duration.ofSeconds(3);
        ElectionConfig cfg = config(ttl).build();
        long margin = cfg.safetyMargin().toNanos();
        Candidate l = Candidate.started(cfg, name, "l");
        Candidate f = Candidate.started(cfg, name, "f");
        CopyOnWriteArrayList<Candidate> both = new CopyOnWriteArrayList<>(List.of(l, f));
        try (ValidityMonitor monitor = ValidityMonitor.of(both)) {
            Candidate leader = awaitSingleLeader(both, Duration.ofSeconds(10));
            Candidate follower = leader == l ? f : l;
            long term = leader.term();
            await().atMost(Duration.ofSeconds(10)).until(() -> follower.state() == LeadershipState.FOLLOWER);
            long pausedAt = System.nanoTime();
            cluster.member(1).pause();
            cluster.member(2).pause();
            long resumedAt;
            try {
                // A failed renewal is retried on the other members first, so SUSPECT may come only from the local
                // deadline; and the etcd leader keeps confirming renewals for up to an election timeout after it lost
                // the quorum. Hence the bound ttl + 2 s; what matters is the assertion against the expiry below.
                await().atMost(ttl.plusSeconds(2))
                        .pollInterval(Duration.ofMillis(5))
                        .until(() -> leader.state() == LeadershipState.SUSPECT);
                ElectionEvent suspect = leader.eventsTo(LeadershipState.SUSPECT).get(0);
                // etcd cannot expire the lease before (send time of the last confirmed renewal) + TTL
                //   = suspect.validUntilNanos() + safetyMargin
                long earliestExpiry = suspect.validUntilNanos() + margin;
                log.info(
                        "quorum loss: suspect {} ms after pause ({}), {} ms before the earliest possible lease expiry",
                        TimeUnit.NANOSECONDS.toMillis(suspect.nanoTime() - pausedAt),
                        suspect.reason(),
                        TimeUnit.NANOSECONDS.toMillis(earliestExpiry - suspect.nanoTime()));
                assertThat(suspect.nanoTime())
                        .as("SUSPECT before the lease could expire at etcd")
                        .isLessThan(earliestExpiry);
                assertThat(leader.isValidLeader()).isFalse();
                leader.crash(); // the old leader dies while the cluster has no quorum
                long keepLostUntil = pausedAt + ttl.toNanos() + TimeUnit.SECONDS.toNanos(2);
                Thread.sleep(
                        TimeUnit.NANOSECONDS.toMillis(Math.max(0, keepLostUntil - System.nanoTime()))); // the fault
            } finally {
                cluster.member(1).resume();
                cluster.member(2).resume();
                resumedAt = System.nanoTime();
            }
            Leadership next = follower.election.awaitLeadership(Duration.ofSeconds(20));
            ElectionEvent won = follower.eventsTo(LeadershipState.LEADER).get(0);
            assertThat(won.nanoTime()).as("no new leader while quorum was lost").isGreaterThan(resumedAt);
            assertThat(next.term()).as("exactly one new term").isEqualTo(term + 1);
            assertThat(Long.parseLong(cluster.etcdctl("get", cfg.keys(name).term(), "--print-value-only")
                            .trim()))
                    .as("term key after recovery")
                    .isEqualTo(term + 1);
            assertThat(awaitSingleLeader(both, Duration.ofSeconds(5))).isSameAs(follower);
            monitor.close();
            assertThat(monitor.violations).isEmpty();
        } finally {
            l.close();
            f.close();
        }
    }

    @Test
    void minorityOnlyCandidateNeverWins() throws Exception {
        String name = electionName("minority");
        ElectionConfig cfg = config(Duration.ofSeconds(2)).build();
        ElectionConfig minorityCfg = cfg.toBuilder()
                .endpoints(List.of(cluster.member(0).clientEndpoint()))
                .build();
        Candidate l = Candidate.started(cfg, name, "l");
        Leadership ll = l.election.awaitLeadership(Duration.ofSeconds(10));
        try (Candidate m = Candidate.started(minorityCfg, name, "m")) {
            await().atMost(Duration.ofSeconds(10)).until(() -> m.state() == LeadershipState.FOLLOWER);
            cluster.member(1).pause();
            cluster.member(2).pause();
            try {
                l.crash(); // leader key can now only disappear if etcd (a quorum) expires the lease
                await().during(Duration.ofSeconds(5))
                        .atMost(Duration.ofSeconds(6))
                        .pollInterval(Duration.ofMillis(10))
                        .until(() -> m.state() != LeadershipState.LEADER && m.state() != LeadershipState.SUSPECT);
            } finally {
                cluster.member(1).resume();
                cluster.member(2).resume();
            }
            assertThat(m.eventsTo(LeadershipState.LEADER)).isEmpty();
            Leadership lm = m.election.awaitLeadership(Duration.ofSeconds(20)); // with quorum back it can win
            assertThat(lm.term()).isEqualTo(ll.term() + 1);
        }
    }

    @Test
    void killSwitchAndTermFloorBehaveAsDocumented() throws Exception {
        String name = electionName("ops");
        ElectionConfig cfg = config(Duration.ofSeconds(2))
                .resignHoldOff(Duration.ofMillis(300))
                .build();
        ElectionKeys keys = cfg.keys(name);
        try (ElectionAdmin admin = ElectionAdmin.connect(cfg);
                Candidate a = Candidate.started(cfg, name, "a");
                Candidate b = Candidate.started(cfg, name, "b")) {
            List<Candidate> both = List.of(a, b);
            Candidate first = awaitSingleLeader(both, Duration.ofSeconds(10));
            long t1 = first.term();

            // etcdctl sees the documented keys and the record
            String listed = cluster.etcdctl("get", "--prefix", keys.root(), "--keys-only");
            assertThat(listed).contains(keys.leader(), keys.term());
            LeaderRecord rec = dev.fenceline.election.internal.LeaderRecordCodec.decode(
                    cluster.etcdctl("get", keys.leader(), "--print-value-only")
                            .trim()
                            .getBytes());
            assertThat(rec.leaderId()).isEqualTo(first.id);
            assertThat(rec.term()).isEqualTo(t1);
            assertThat(admin.leader(name)).contains(rec);
            assertThat(cluster.etcdctl("lease", "timetolive", rec.leaseIdHex())).contains("remaining");
            assertThat(admin.currentTerm(name)).isEqualTo(t1);

            // kill switch: leader resigns, nobody campaigns while paused
            admin.pause(name);
            assertThat(admin.isPaused(name)).isTrue();
            await().atMost(Duration.ofSeconds(5)).until(() -> first.state() == LeadershipState.FOLLOWER);
            assertThat(first.eventsTo(LeadershipState.FOLLOWER).stream().anyMatch(e -> e.leadership() != null))
                    .isTrue();
            await().during(Duration.ofSeconds(1))
                    .atMost(Duration.ofSeconds(2))
                    .until(() -> !a.isValidLeader()
                            && !b.isValidLeader()
                            && admin.leader(name).isEmpty());
            assertThat(cluster.etcdctl("get", "--prefix", keys.root(), "--keys-only"))
                    .contains(keys.paused());
            admin.resume(name);
            Candidate second = awaitSingleLeader(both, Duration.ofSeconds(10));
            assertThat(second.term()).isEqualTo(t1 + 1);

            // term floor: the current leader keeps its term, the next term is the floor
            long floor = t1 + 100;
            assertThat(admin.ensureTermAtLeast(name, floor)).isEqualTo(floor);
            assertThat(admin.ensureTermAtLeast(name, 5)).as("never lowers").isEqualTo(floor);
            assertThat(second.term()).isEqualTo(t1 + 1);
            assertThat(second.isValidLeader()).isTrue();
            assertThat(admin.requestResign(name)).contains(t1 + 1);
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                Optional<LeaderRecord> r = admin.leader(name);
                return r.isPresent() && r.get().term() > t1 + 1;
            });
            Candidate third = awaitSingleLeader(both, Duration.ofSeconds(10));
            assertThat(third.term()).isEqualTo(floor);
            assertThat(cluster.etcdctl("get", keys.termFloor(), "--print-value-only")
                            .trim())
                    .isEqualTo(Long.toString(floor));
            assertThat(cluster.etcdctl("get", keys.resignRequest(), "--print-value-only")
                            .trim())
                    .isEmpty();
        }
    }

    @Test
    void badConfigAndUnreachableEndpointsFailClearlyWithinBound() throws Exception {
        assertThatThrownBy(() -> ElectionConfig.builder().build())
                .hasMessage(
                        "endpoints must contain at least one etcd client URL (e.g. http://127.0.0.1:2379) but was empty");
        assertThatThrownBy(() -> ElectionConfig.builder()
                        .endpoints("ftp://127.0.0.1:2379")
                        .build())
                .hasMessageContaining("'ftp://127.0.0.1:2379' is not");
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            port = s.getLocalPort();
        }
        ElectionConfig unreachable = ElectionConfig.builder()
                .endpoints("http://127.0.0.1:" + port)
                .connectTimeout(Duration.ofSeconds(1))
                .closeOnShutdown(false)
                .build();
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> ElectionSession.open(unreachable))
                .isInstanceOf(ElectionException.class)
                .hasMessageContaining("no etcd endpoint of [http://127.0.0.1:" + port
                        + "] granted a lease within connectTimeout=1000ms");
        long openMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        t0 = System.nanoTime();
        assertThatThrownBy(() -> ElectionAdmin.connect(unreachable))
                .isInstanceOf(ElectionException.class)
                .hasMessageContaining("within connectTimeout=1000ms");
        long adminMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        log.info("unreachable endpoint: open failed after {} ms, admin connect after {} ms", openMs, adminMs);
        // bound = connectTimeout + one call timeout + scheduling slack
        assertThat(openMs).isLessThan(1000 + unreachable.callTimeout().toMillis() + 1500);
        assertThat(adminMs).isLessThan(1000 + unreachable.callTimeout().toMillis() + 1500);
    }

    @Test
    void lifecycleMisuseGivesExactMessages() {
        String name = electionName("lifecycle");
        try (ElectionSession session =
                ElectionSession.open(config(Duration.ofSeconds(2)).build())) {
            LeaderElection e = session.election(name, "x");
            assertThat(e.state()).isEqualTo(LeadershipState.LATENT);
            assertThatThrownBy(e::resign).hasMessage("resign() called before start()");
            assertThatThrownBy(() -> session.election(name, "y"))
                    .hasMessage("election '" + name + "' already has a handle in this session");
            e.start();
            assertThatThrownBy(e::start).hasMessage("start() called twice");
            e.close();
            e.close(); // idempotent
            assertThat(e.state()).isEqualTo(LeadershipState.CLOSED);
            assertThatThrownBy(e::start).hasMessage("start() called after close()");
            assertThatThrownBy(() -> e.awaitLeadership(Duration.ofMillis(10))).hasMessageContaining("is closed");
            LeaderElection again = session.election(name, "x"); // the name is free again after close
            assertThat(again.state()).isEqualTo(LeadershipState.LATENT);
        }
    }

    @Test
    void unreadableOrLeftoverRecordsAreResolvedWithoutGuessing() throws Exception {
        String name = electionName("records");
        ElectionConfig cfg = config(Duration.ofSeconds(2)).build();
        ElectionKeys keys = cfg.keys(name);
        // 1. garbage in the leader key (an operator's mistake): nobody overwrites it, nobody leads
        cluster.etcdctl("put", keys.leader(), "not a leader record");
        try (Candidate a = Candidate.started(cfg, name, "a")) {
            await().atMost(Duration.ofSeconds(5)).until(() -> a.state() == LeadershipState.FOLLOWER);
            await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(2)).until(() -> !a.isValidLeader());
            assertThat(cluster.etcdctl("get", keys.leader(), "--print-value-only")
                            .trim())
                    .isEqualTo("not a leader record");
            cluster.etcdctl("del", keys.leader());
            Leadership first = a.election.awaitLeadership(Duration.ofSeconds(5));
            assertThat(first.term()).isEqualTo(1);
        }
        // 2. a record bound to our own lease with a nonce we never issued (e.g. a resign whose delete was lost):
        //    it is ours to remove (guarded by its mod revision), then we campaign for a new term
        try (Candidate b = new Candidate(cfg, name, "b")) {
            String leftover = "{\"leader_id\":\"b\",\"term\":1,\"lease_id\":" + b.session.leaseId()
                    + ",\"nonce\":\"leftover\",\"metadata\":{},\"acquired_at\":\"2026-01-01T00:00:00Z\"}";
            cluster.etcdctl("put", keys.leader(), leftover, "--lease=" + Long.toHexString(b.session.leaseId()));
            b.election.start();
            Leadership l = b.election.awaitLeadership(Duration.ofSeconds(5));
            assertThat(l.nonce()).isNotEqualTo("leftover");
            assertThat(l.term()).isEqualTo(2);
            try (ElectionAdmin admin = ElectionAdmin.connect(cfg)) {
                assertThat(admin.leader(name).orElseThrow().nonce()).isEqualTo(l.nonce());
            }
        }
    }
}
