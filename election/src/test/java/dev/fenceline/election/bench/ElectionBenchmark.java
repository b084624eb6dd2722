package dev.fenceline.election.bench;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionEvent;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.election.internal.DefaultElectionSession;
import dev.fenceline.election.internal.SessionFaults;
import dev.fenceline.testkit.EtcdCluster;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Election benchmark (not a test). Starts its own 3-member etcd cluster on loopback and prints:
 * uncontended campaign latency; handover after resign; failover after crash (TTL 2 s and 5 s);
 * failover with the member carrying the followers' watch hung (SIGSTOP; goal ttl + 1 s); SUSPECT transitions
 * per minute with one member stopped (goal 0); many elections on one lease (1 000 and 10 000) with the etcd
 * request rate. Run with
 * {@code election/run-benchmark.sh}. Every loop is bounded in count and time.
 */
public final class ElectionBenchmark {
    private static EtcdCluster cluster;

    public static void main(String[] args) throws Exception {
        long t0 = System.nanoTime();
        cluster = EtcdCluster.start(3);
        try {
            System.out.printf(
                    "etcd: 3 members on loopback (%s), %d cores%n",
                    cluster.endpointsCsv(), Runtime.getRuntime().availableProcessors());
            String only = System.getProperty("bench.only", "all");
            if (only.equals("all") || only.contains("campaign")) {
                uncontendedCampaign(100);
            }
            if (only.equals("all") || only.contains("handover")) {
                handoverAfterResign(100, Duration.ZERO);
            }
            if (only.equals("all") || only.contains("failover")) {
                failoverAfterCrash(Duration.ofSeconds(2), 15, Duration.ZERO);
                failoverAfterCrash(Duration.ofSeconds(5), 8, Duration.ZERO);
            }
            if (only.equals("all") || only.contains("holdoff")) {
                // the cost of leaseLossHoldOff, side by side with the same runs without it
                failoverAfterCrash(Duration.ofSeconds(2), 8, Duration.ZERO);
                failoverAfterCrash(Duration.ofSeconds(2), 8, Duration.ofSeconds(2));
                handoverAfterResign(30, Duration.ZERO);
                handoverAfterResign(30, Duration.ofSeconds(5));
            }
            if (only.equals("all") || only.contains("hung")) {
                failoverWithWatchMemberHung(Duration.ofSeconds(3), 8);
            }
            if (only.equals("all") || only.contains("flap")) {
                suspectRateWithMemberStopped(Duration.ofSeconds(2), Duration.ofSeconds(60));
                suspectRateWithMemberStopped(Duration.ofSeconds(5), Duration.ofSeconds(60));
            }
            if (only.equals("all") || only.contains("many")) {
                manyElectionsOnOneLease(1_000);
                manyElectionsOnOneLease(10_000);
            }
        } finally {
            cluster.close();
        }
        System.out.printf("benchmark done in %d s%n", TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0));
        System.exit(0);
    }

    private static ElectionConfig.Builder config(Duration ttl) {
        return ElectionConfig.builder()
                .endpoints(cluster.endpoints())
                .ttl(ttl)
                .closeOnShutdown(false)
                .meterRegistry(new SimpleMeterRegistry());
    }

    /** start() -> LEADER on an election nobody else contends. */
    static void uncontendedCampaign(int n) throws Exception {
        List<Long> ms = new ArrayList<>();
        try (ElectionSession s =
                ElectionSession.open(config(Duration.ofSeconds(5)).build())) {
            for (int i = 0; i < n; i++) {
                LeaderElection e = s.election("uncontended-" + i, "bench");
                CountDownLatch won = new CountDownLatch(1);
                e.addListener(
                        ev -> {
                            if (ev.state() == LeadershipState.LEADER) {
                                won.countDown();
                            }
                        },
                        Runnable::run);
                long start = System.nanoTime();
                e.start();
                if (!won.await(10, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("uncontended campaign did not win in 10 s");
                }
                ms.add(System.nanoTime() - start);
                e.close();
            }
        }
        print("uncontended campaign (start -> LEADER), n=" + n, ms);
    }

    /** leader.resign() -> another candidate LEADER (its event time), 3 candidates on separate sessions. */
    static void handoverAfterResign(int n, Duration leaseLossHoldOff) throws Exception {
        ElectionConfig cfg = config(Duration.ofSeconds(5))
                .resignHoldOff(Duration.ofMillis(300))
                .leaseLossHoldOff(leaseLossHoldOff)
                .build();
        String name = "handover-" + leaseLossHoldOff.toSeconds();
        List<ElectionSession> sessions = new ArrayList<>();
        List<LeaderElection> cands = new ArrayList<>();
        AtomicLong lastLeaderEventNanos = new AtomicLong();
        for (int i = 0; i < 3; i++) {
            ElectionSession s = ElectionSession.open(cfg);
            sessions.add(s);
            LeaderElection e = s.election(name, "c" + i);
            e.addListener(
                    ev -> {
                        if (ev.state() == LeadershipState.LEADER) {
                            lastLeaderEventNanos.set(ev.nanoTime());
                        }
                    },
                    Runnable::run);
            e.start();
            cands.add(e);
        }
        List<Long> ns = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                LeaderElection leader = awaitLeader(cands, Duration.ofSeconds(10));
                Thread.sleep(350); // let the previous resigner's hold-off end so every handover is a clean race
                long before = lastLeaderEventNanos.get();
                long start = System.nanoTime();
                leader.resign();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (lastLeaderEventNanos.get() == before && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
                ns.add(lastLeaderEventNanos.get() - start);
            }
        } finally {
            sessions.forEach(ElectionSession::close);
        }
        print("handover after resign (resign() -> successor LEADER)" + holdOffLabel(leaseLossHoldOff) + ", n=" + n, ns);
    }

    /** crash (no renewals, no delete) -> successor LEADER. */
    static void failoverAfterCrash(Duration ttl, int n, Duration leaseLossHoldOff) throws Exception {
        ElectionConfig cfg = config(ttl).leaseLossHoldOff(leaseLossHoldOff).build();
        String name = "failover-" + ttl.toSeconds() + "-" + leaseLossHoldOff.toSeconds();
        List<DefaultElectionSession> sessions = new ArrayList<>();
        List<LeaderElection> cands = new ArrayList<>();
        AtomicLong lastLeaderEventNanos = new AtomicLong();
        int next = 0;
        for (; next < 3; next++) {
            cands.add(candidate(cfg, name, "c" + next, sessions, lastLeaderEventNanos));
        }
        List<Long> ns = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                LeaderElection leader = awaitLeader(cands, Duration.ofSeconds(30));
                int idx = cands.indexOf(leader);
                long before = lastLeaderEventNanos.get();
                long start = System.nanoTime();
                SessionFaults.crash(sessions.get(idx));
                sessions.remove(idx);
                cands.remove(idx);
                cands.add(candidate(cfg, name, "c" + next++, sessions, lastLeaderEventNanos));
                long deadline = System.nanoTime() + ttl.toNanos() * 4 + leaseLossHoldOff.toNanos();
                while (lastLeaderEventNanos.get() == before && System.nanoTime() < deadline) {
                    Thread.sleep(1);
                }
                ns.add(lastLeaderEventNanos.get() - start);
            }
        } finally {
            sessions.forEach(DefaultElectionSession::close);
        }
        print(
                "failover after crash, ttl " + ttl.toSeconds() + " s (crash -> successor LEADER)"
                        + holdOffLabel(leaseLossHoldOff) + ", n=" + n,
                ns);
    }

    private static String holdOffLabel(Duration leaseLossHoldOff) {
        return leaseLossHoldOff.isZero() ? "" : ", leaseLossHoldOff " + leaseLossHoldOff.toSeconds() + " s";
    }

    /**
     * Leader crash while the member carrying the followers' watch is hung (SIGSTOP): crash -> successor LEADER.
     * Each round hangs the member the first follower watches, crashes the leader, then resumes the member.
     */
    static void failoverWithWatchMemberHung(Duration ttl, int n) throws Exception {
        ElectionConfig cfg = config(ttl).build();
        String name = "failover-hung-" + ttl.toSeconds();
        List<DefaultElectionSession> sessions = new ArrayList<>();
        List<LeaderElection> cands = new ArrayList<>();
        AtomicLong lastLeaderEventNanos = new AtomicLong();
        int next = 0;
        for (; next < 3; next++) {
            cands.add(candidate(cfg, name, "c" + next, sessions, lastLeaderEventNanos));
        }
        List<Long> ns = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                LeaderElection leader = awaitLeader(cands, Duration.ofSeconds(30));
                int idx = cands.indexOf(leader);
                int follower = (idx + 1) % cands.size();
                String watched = sessions.get(follower).watchEndpoint();
                dev.fenceline.testkit.EtcdMember hung = cluster.members().stream()
                        .filter(m -> m.clientEndpoint().equals(watched))
                        .findFirst()
                        .orElseThrow();
                long before = lastLeaderEventNanos.get();
                hung.pause();
                try {
                    long start = System.nanoTime();
                    SessionFaults.crash(sessions.get(idx));
                    sessions.remove(idx);
                    cands.remove(idx);
                    long deadline = System.nanoTime() + ttl.toNanos() * 20;
                    while (lastLeaderEventNanos.get() == before && System.nanoTime() < deadline) {
                        Thread.sleep(1);
                    }
                    ns.add(lastLeaderEventNanos.get() - start);
                } finally {
                    hung.resume();
                }
                cands.add(candidate(cfg, name, "c" + next++, sessions, lastLeaderEventNanos));
                cluster.awaitHealthy(Duration.ofSeconds(30));
            }
        } finally {
            sessions.forEach(DefaultElectionSession::close);
        }
        print(
                "failover with the followers' watch member hung, ttl " + ttl.toSeconds() + " s (goal <= "
                        + (ttl.toMillis() + 1000) + " ms), n=" + n,
                ns);
    }

    /**
     * One leader, one member stopped (SIGSTOP), each member in turn for {@code window}/members: LEADER -> SUSPECT
     * transitions per minute, split by whether the stopped member was the raft leader (then etcd itself has no
     * leader for an election timeout, 1-2 s here, and a short TTL can honestly run out).
     */
    static void suspectRateWithMemberStopped(Duration ttl, Duration window) throws Exception {
        long followerStops = 0;
        long leaderStops = 0;
        long suspectsFollower = 0;
        long suspectsLeader = 0;
        long msEach = window.toMillis() / cluster.members().size();
        for (dev.fenceline.testkit.EtcdMember stopped : cluster.members()) {
            AtomicLong suspects = new AtomicLong();
            boolean raftLeader;
            try (io.etcd.jetcd.Client c = io.etcd.jetcd.Client.builder()
                    .endpoints(stopped.clientEndpoint())
                    .build()) {
                io.etcd.jetcd.maintenance.StatusResponse st = c.getMaintenanceClient()
                        .statusMember(stopped.clientEndpoint())
                        .get(5, TimeUnit.SECONDS);
                raftLeader = st.getLeader() == st.getHeader().getMemberId();
            }
            try (ElectionSession s = ElectionSession.open(config(ttl).build())) {
                LeaderElection e = s.election("flap-" + ttl.toSeconds() + "-" + stopped.name(), "l");
                e.addListener(
                        ev -> {
                            if (ev.state() == LeadershipState.SUSPECT) {
                                suspects.incrementAndGet();
                            }
                        },
                        Runnable::run);
                e.start();
                e.awaitLeadership(Duration.ofSeconds(10));
                stopped.pause();
                try {
                    Thread.sleep(msEach); // the measured interval
                } finally {
                    stopped.resume();
                }
            }
            cluster.awaitHealthy(Duration.ofSeconds(30));
            if (raftLeader) {
                leaderStops++;
                suspectsLeader += suspects.get();
            } else {
                followerStops++;
                suspectsFollower += suspects.get();
            }
        }
        System.out.printf(
                "SUSPECT transitions with one member stopped, ttl %d s: raft follower stopped: %d in %d s "
                        + "= %.2f per minute (goal 0); raft leader stopped: %d in %d s%n",
                ttl.toSeconds(),
                suspectsFollower,
                followerStops * msEach / 1000,
                followerStops == 0 ? 0.0 : suspectsFollower / (followerStops * msEach / 60_000.0),
                suspectsLeader,
                leaderStops * msEach / 1000);
    }

    private static LeaderElection candidate(
            ElectionConfig cfg, String name, String id, List<DefaultElectionSession> sessions, AtomicLong lastLeader) {
        DefaultElectionSession s = (DefaultElectionSession) ElectionSession.open(cfg);
        sessions.add(s);
        LeaderElection e = s.election(name, id);
        e.addListener(
                ev -> {
                    if (ev.state() == LeadershipState.LEADER) {
                        lastLeader.set(ev.nanoTime());
                    }
                },
                Runnable::run);
        e.start();
        return e;
    }

    /** One session (one lease), n elections it wins; then 5 s settle and 10 s of steady state. */
    static void manyElectionsOnOneLease(int n) throws Exception {
        ElectionConfig cfg = config(Duration.ofSeconds(5)).build();
        DefaultElectionSession s = (DefaultElectionSession) ElectionSession.open(cfg);
        try {
            CountDownLatch allWon = new CountDownLatch(n);
            List<LeaderElection> es = new ArrayList<>(n);
            long req0 = s.etcdRequestCount();
            long start = System.nanoTime();
            for (int i = 0; i < n; i++) {
                LeaderElection e = s.election("shard-" + n + "-" + i, "bench");
                e.addListener(
                        (ElectionEvent ev) -> {
                            if (ev.state() == LeadershipState.LEADER) {
                                allWon.countDown();
                            }
                        },
                        Runnable::run);
                es.add(e);
                e.start();
            }
            if (!allWon.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException(allWon.getCount() + " of " + n + " elections not won within 120 s");
            }
            double secs = (System.nanoTime() - start) / 1e9;
            long campaignReqs = s.etcdRequestCount() - req0;
            Thread.sleep(5_000); // let queued watch-triggered re-reads drain before measuring the steady state
            long req1 = s.etcdRequestCount();
            long steadyStart = System.nanoTime();
            Thread.sleep(10_000);
            double steadySecs = (System.nanoTime() - steadyStart) / 1e9;
            long steadyReqs = s.etcdRequestCount() - req1;
            long valid = es.stream()
                    .filter(e -> e.leadership().map(Leadership::isValidNow).orElse(false))
                    .count();
            System.out.printf(
                    "%,d elections on one lease: all LEADER after %.2f s (%,.0f elections/s, %,d etcd requests "
                            + "= %.1f per election); steady state %.1f etcd requests/s over %.0f s; valid leaderships at end: %,d%n",
                    n,
                    secs,
                    n / secs,
                    campaignReqs,
                    campaignReqs / (double) n,
                    steadyReqs / steadySecs,
                    steadySecs,
                    valid);
        } finally {
            long c0 = System.nanoTime();
            s.close();
            System.out.printf(
                    "  closing the session (end %,d terms locally, revoke the lease): %d ms%n",
                    n, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - c0));
        }
    }

    private static LeaderElection awaitLeader(List<LeaderElection> cands, Duration atMost) throws InterruptedException {
        long deadline = System.nanoTime() + atMost.toNanos();
        while (System.nanoTime() < deadline) {
            for (LeaderElection e : cands) {
                if (e.leadership().map(Leadership::isValidNow).orElse(false)) {
                    return e;
                }
            }
            Thread.sleep(1);
        }
        throw new IllegalStateException("no leader within " + atMost);
    }

    private static void print(String what, List<Long> nanos) {
        List<Long> s = new ArrayList<>(nanos);
        Collections.sort(s);
        System.out.printf(
                "%s: p50 %.1f ms, p99 %.1f ms, max %.1f ms, min %.1f ms%n",
                what, pct(s, 50), pct(s, 99), s.get(s.size() - 1) / 1e6, s.get(0) / 1e6);
    }

    private static double pct(List<Long> sorted, int p) {
        int idx = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, idx))) / 1e6;
    }
}
