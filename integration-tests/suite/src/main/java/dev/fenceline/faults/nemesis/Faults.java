package dev.fenceline.faults.nemesis;

import dev.fenceline.faults.workload.DbSnapshot;
import dev.fenceline.faults.workload.FaultEnvironment;
import dev.fenceline.faults.workload.WorkerProcess;
import dev.fenceline.testkit.EtcdMember;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.BiFunction;

/**
 * The nemesis: every fault kind, each small, named, with its heal; this class is the one place their names live. Faults aimed at "the leader" pick the
 * worker whose /health says it is the valid leader (waiting up to 3 TTLs for one), else a seeded random live worker.
 */
public final class Faults {
    public static final String FREEZE_LEADER = "freezeLeader";
    public static final String KILL_LEADER = "killLeader";
    public static final String WORKER_ETCD_PARTITION = "workerEtcdPartition";
    public static final String QUORUM_LOSS = "quorumLoss";
    public static final String QUORUM_BLIP = "quorumBlip";
    public static final String MINORITY_PARTITION = "minorityPartition";
    public static final String CLOCK_JUMP = "clockJump";
    public static final String DB_CONNECTION_LOSS = "dbConnectionLoss";
    public static final String COORDINATOR_REBUILT = "coordinatorRebuilt";

    // The way to PostgreSQL (PostgresPathFaults): need a pooler / a standby in the run's PostgresSetup, else skipped.
    public static final String PGBOUNCER_RESTART = "pgbouncerRestart";
    public static final String PGBOUNCER_PAUSE = "pgbouncerPause";
    public static final String POOLER_SERVER_CONN_KILL = "poolerServerConnKill";
    public static final String POSTGRES_FAILOVER = "postgresFailover";
    // Inside etcd (EtcdFaults) and writers that are no leader (RogueFaults).
    public static final String HUNG_ETCD_MEMBER = "hungEtcdMember";
    public static final String SLOW_ETCD_DISK = "slowEtcdDisk";
    public static final String ROGUE_WRITER = "rogueWriter";
    public static final String AUDIT_FLOOD = "auditFlood";
    /** The kinds added with the etcd-internal and rogue-writer nemeses. */
    public static final List<String> ETCD_AND_ROGUE_KINDS =
            List.of(HUNG_ETCD_MEMBER, SLOW_ETCD_DISK, ROGUE_WRITER, AUDIT_FLOOD);
    /** The kinds that act on the way to PostgreSQL, for runs set up with a pooler and a standby. */
    public static final List<String> POSTGRES_PATH_KINDS =
            List.of(PGBOUNCER_RESTART, PGBOUNCER_PAUSE, POOLER_SERVER_CONN_KILL, POSTGRES_FAILOVER);

    private static final Map<String, Fault> ALL = new LinkedHashMap<>();

    static {
        register(FREEZE_LEADER, (env, rnd) -> {
            // Frozen inside a batch (after its updates, before its commit) when the leader gets there within 2 TTLs:
            // on SIGCONT that batch tries to commit with a stale term, which PostgreSQL must reject and audit.
            WorkerProcess w = leaderOrAny(env, rnd);
            boolean inside = w.pauseInsideNextBatch(env.config.ttl().multipliedBy(2));
            w.freeze();
            w.releasePause(); // the frozen process sees it only when resumed
            return Injection.onWorker(
                    w.id(),
                    "SIGSTOP pid " + w.pid()
                            + (inside ? " inside a batch, before its commit" : " (between batches: no batch reached)"),
                    longerThanTtl(env),
                    w::thaw);
        });
        register(KILL_LEADER, (env, rnd) -> {
            WorkerProcess w = leaderOrAny(env, rnd);
            long pid = w.pid();
            w.kill9();
            return Injection.onWorker(
                    w.id(), "kill -9 pid " + pid, env.config.ttl().dividedBy(2), w::start);
        });
        register(WORKER_ETCD_PARTITION, (env, rnd) -> {
            WorkerProcess w = leaderOrAny(env, rnd);
            List<TcpProxy> proxies = env.clientProxies.get(w.id());
            proxies.forEach(TcpProxy::blackhole);
            return Injection.onWorker(
                    w.id(), "all etcd traffic blackholed", longerThanTtl(env), () -> proxies.forEach(TcpProxy::heal));
        });
        register(QUORUM_LOSS, (env, rnd) -> pauseTwo(env, rnd, longerThanTtl(env)));
        register(QUORUM_BLIP, (env, rnd) -> pauseTwo(env, rnd, env.config.ttl().dividedBy(4)));
        register(MINORITY_PARTITION, (env, rnd) -> {
            EtcdMember m = env.etcd.member(rnd.nextInt(env.etcd.members().size()));
            env.peers.isolate(m.name());
            return Injection.of(
                    m.name(),
                    "cut off from its peers; clients can still reach it",
                    longerThanTtl(env),
                    env.peers::heal);
        });
        ALL.put(CLOCK_JUMP, new Fault() {
            @Override
            public String kind() {
                return CLOCK_JUMP;
            }

            @Override
            public boolean available(FaultEnvironment env) {
                return env.clock != null;
            }

            @Override
            public Injection inject(FaultEnvironment env, Random rnd) {
                WorkerProcess w = leaderOrAny(env, rnd);
                // Forward on the 1st, 3rd, ... clock jump of a run, backward on the 2nd, 4th, ...: both in every smoke.
                int minutes = 2 + rnd.nextInt(9);
                boolean forward = env.injections.getOrDefault(CLOCK_JUMP, 1) % 2 == 1;
                Duration offset = Duration.ofMinutes(forward ? minutes : -minutes);
                env.clock.jump(w.id(), offset);
                return Injection.onWorker(
                        w.id(),
                        "wall clock " + (offset.isNegative() ? "" : "+") + offset.toMinutes() + " min",
                        longerThanTtl(env),
                        () -> env.clock.reset(w.id()));
            }
        });
        register(DB_CONNECTION_LOSS, (env, rnd) -> {
            WorkerProcess w = leaderOrAny(env, rnd);
            String app = "fenceline-worker-" + w.id();
            // Mid-batch: hold the leader inside a batch (before its commit), terminate its sessions, let it go on.
            boolean midBatch = w.pauseInsideNextBatch(env.config.ttl().multipliedBy(2));
            int killed = DbSnapshot.terminateSessions(env.dataSource, app);
            w.releasePause();
            return Injection.onWorker(
                    w.id(),
                    killed + " session(s) of " + app + " terminated"
                            + (midBatch ? " mid-batch" : " (between batches: no batch reached)"),
                    Duration.ofMillis(500),
                    () -> {});
        });
        register(COORDINATOR_REBUILT, (env, rnd) -> {
            env.etcd.rebuild();
            env.peers.reroute();
            return Injection.of(
                    "etcd cluster",
                    "all members killed and wiped, new cluster on the same ports; " + "database mark " + env.mark()
                            + " kept",
                    Duration.ZERO,
                    () -> {});
        });
        PostgresPathFaults.all().forEach(f -> ALL.put(f.kind(), f));
        EtcdFaults.all().forEach(f -> ALL.put(f.kind(), f));
        RogueFaults.all().forEach(f -> ALL.put(f.kind(), f));
    }

    private Faults() {}

    private static void register(String kind, BiFunction<FaultEnvironment, Random, Injection> f) {
        ALL.put(kind, new Fault() {
            @Override
            public String kind() {
                return kind;
            }

            @Override
            public Injection inject(FaultEnvironment env, Random rnd) {
                return f.apply(env, rnd);
            }
        });
    }

    public static List<String> kinds() {
        return List.copyOf(ALL.keySet());
    }

    public static Fault get(String kind) {
        Fault f = ALL.get(kind);
        if (f == null) {
            throw new IllegalArgumentException("unknown fault kind '" + kind + "'; known: " + ALL.keySet());
        }
        return f;
    }

    /** The etcd server version the run's members report (for the report), or "unknown". */
    public static String etcdServerVersion(FaultEnvironment env) {
        return EtcdFaults.serverVersion(env.etcd);
    }

    /** Long enough that the lease must expire: 2 TTLs plus half a second. */
    static Duration longerThanTtl(FaultEnvironment env) {
        return env.config.ttl().multipliedBy(2).plusMillis(500);
    }

    static WorkerProcess leaderOrAny(FaultEnvironment env, Random rnd) {
        return env.awaitLeader(env.config.ttl().multipliedBy(3)).orElseGet(() -> {
            List<WorkerProcess> alive = new ArrayList<>(
                    env.workers.stream().filter(WorkerProcess::isAlive).toList());
            return alive.isEmpty() ? env.workers.get(0) : alive.get(rnd.nextInt(alive.size()));
        });
    }

    private static Injection pauseTwo(FaultEnvironment env, Random rnd, Duration hold) {
        List<EtcdMember> members = new ArrayList<>(env.etcd.members());
        Collections.shuffle(members, rnd);
        List<EtcdMember> paused = members.subList(0, 2);
        paused.forEach(EtcdMember::pause);
        return Injection.of(
                paused.get(0).name() + "," + paused.get(1).name(),
                "SIGSTOP 2 of 3 members",
                hold,
                () -> paused.forEach(EtcdMember::resume));
    }
}
