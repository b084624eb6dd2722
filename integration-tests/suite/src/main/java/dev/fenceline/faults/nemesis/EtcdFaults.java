package dev.fenceline.faults.nemesis;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.faults.workload.FaultEnvironment;
import dev.fenceline.faults.workload.WorkerProcess;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.EtcdMember;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Faults inside etcd that a client cannot see directly: a member that hangs while its TCP connections stay open
 * ({@link Faults#HUNG_ETCD_MEMBER}) and a Raft leader whose disk syncs stall ({@link Faults#SLOW_ETCD_DISK}). Every
 * process signalled or traced here is an etcd member the testkit started for this run.
 */
final class EtcdFaults {
    private static final Logger log = LoggerFactory.getLogger(EtcdFaults.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static final Path STRACE = Path.of("/usr/bin/strace");

    private EtcdFaults() {}

    static List<Fault> all() {
        return List.of(
                new Fault() {
                    @Override
                    public String kind() {
                        return Faults.HUNG_ETCD_MEMBER;
                    }

                    @Override
                    public Injection inject(FaultEnvironment env, Random rnd) {
                        return hungMember(env, rnd);
                    }
                },
                new Fault() {
                    @Override
                    public String kind() {
                        return Faults.SLOW_ETCD_DISK;
                    }

                    @Override
                    public boolean available(FaultEnvironment env) {
                        return unavailableReason(env) == null;
                    }

                    @Override
                    public String unavailableReason(FaultEnvironment env) {
                        return Files.isExecutable(STRACE)
                                ? null
                                : STRACE
                                        + " is not installed (Debian package strace; scripts/ensure-tools.sh installs it)";
                    }

                    @Override
                    public Injection inject(FaultEnvironment env, Random rnd) throws IOException {
                        return slowDisk(env, rnd);
                    }
                });
    }

    /**
     * SIGSTOP the member carrying most watchers (the followers watch the leader's key, so their watch streams are
     * there), then kill -9 or freeze (seeded) the leader worker: its successor can only learn of the vacancy through
     * a watch on a member that no longer answers, while its TCP connection stays open.
     */
    private static Injection hungMember(FaultEnvironment env, Random rnd) {
        WorkerProcess leader = Faults.leaderOrAny(env, rnd);
        boolean kill = rnd.nextBoolean();
        Map<String, Long> watchers = watchersPerMember(env.etcd);
        EtcdMember hung = mostWatched(env.etcd, watchers, rnd);
        // A frozen leader is first held inside a batch, so that on SIGCONT its batch tries to commit with its old term.
        boolean inside = !kill && leader.pauseInsideNextBatch(env.config.ttl().multipliedBy(2));
        // Asked just before the stop: stopping the Raft leader makes the next one renew every lease (etcd does on a
        // leader change), which may lengthen the succession; the report splits successions by this.
        Optional<EtcdMember> raftLeader = raftLeader(env.etcd);
        Boolean raftLeaderStopped =
                raftLeader.map(l -> l.name().equals(hung.name())).orElse(null);
        String role = raftLeaderStopped == null
                ? "Raft leader unknown"
                : raftLeaderStopped
                        ? "the Raft leader"
                        : "a follower; Raft leader " + raftLeader.get().name();
        hung.pause();
        String what;
        if (kill) {
            long pid = leader.pid();
            leader.kill9();
            what = "kill -9 leader pid " + pid;
        } else {
            leader.freeze();
            leader.releasePause();
            what = "SIGSTOP leader pid " + leader.pid() + (inside ? " inside a batch" : " (between batches)");
        }
        return Injection.onWorker(
                        leader.id(),
                        leader.id() + " + etcd " + hung.name(),
                        "SIGSTOP etcd member " + hung.name() + " pid " + hung.pid() + " (" + role
                                + "; watchers per member " + watchers + "), then " + what,
                        Faults.longerThanTtl(env),
                        () -> {
                            hung.resume();
                            if (kill) {
                                leader.start();
                            } else {
                                leader.thaw();
                            }
                        })
                .withRaftLeaderStopped(raftLeaderStopped);
    }

    /** The member with the most watchers; ties (and no metrics at all) broken by the seeded random. */
    static EtcdMember mostWatched(EtcdCluster etcd, Map<String, Long> watchers, Random rnd) {
        long max = watchers.values().stream().mapToLong(Long::longValue).max().orElse(-1);
        List<EtcdMember> best = new ArrayList<>();
        for (EtcdMember m : etcd.members()) {
            if (watchers.getOrDefault(m.name(), -1L) == max) {
                best.add(m);
            }
        }
        if (best.isEmpty()) {
            best.addAll(etcd.members());
        }
        return best.get(rnd.nextInt(best.size()));
    }

    /** etcd_debugging_mvcc_watcher_total from each running member's /metrics (-1: no answer). */
    static Map<String, Long> watchersPerMember(EtcdCluster etcd) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (EtcdMember m : etcd.members()) {
            long n = -1;
            Optional<String> body = get(m.clientEndpoint() + "/metrics");
            if (body.isPresent()) {
                for (String line : body.get().split("\n")) {
                    if (line.startsWith("etcd_debugging_mvcc_watcher_total ")) {
                        n = (long) Double.parseDouble(
                                line.substring(line.indexOf(' ') + 1).trim());
                    }
                }
            }
            out.put(m.name(), n);
        }
        return out;
    }

    /** The member that says it is the Raft leader (maintenance status through the gRPC gateway), if any answers. */
    static Optional<EtcdMember> raftLeader(EtcdCluster etcd) {
        for (EtcdMember m : etcd.members()) {
            Optional<String> body = post(m.clientEndpoint() + "/v3/maintenance/status", "{}");
            if (body.isEmpty()) {
                continue;
            }
            try {
                JsonNode n = JSON.readTree(body.get());
                String self = n.path("header").path("member_id").asText("");
                String leader = n.path("leader").asText("");
                if (!leader.isEmpty() && leader.equals(self)) {
                    return Optional.of(m);
                }
            } catch (IOException e) {
                log.debug("status of {}: {}", m.name(), e.toString());
            }
        }
        return Optional.empty();
    }

    /** The etcd server version a member reports on /version, or "unknown". */
    static String serverVersion(EtcdCluster etcd) {
        for (EtcdMember m : etcd.members()) {
            Optional<String> body = get(m.clientEndpoint() + "/version");
            if (body.isPresent()) {
                try {
                    return JSON.readTree(body.get()).path("etcdserver").asText("unknown");
                } catch (IOException e) {
                    log.debug("version of {}: {}", m.name(), e.toString());
                }
            }
        }
        return "unknown";
    }

    /**
     * Delays every fdatasync of the Raft leader by TTL + 1 s ({@code strace -f -e inject=fdatasync:delay_enter=...
     * -p PID}) until the heal, which stops strace (it detaches). Only the member process the testkit started is traced.
     */
    private static Injection slowDisk(FaultEnvironment env, Random rnd) throws IOException {
        EtcdMember target = raftLeader(env.etcd)
                .orElseGet(() -> env.etcd.member(rnd.nextInt(env.etcd.members().size())));
        long pid = target.pid();
        long delayUs = env.config.ttl().plusSeconds(1).toNanos() / 1_000;
        Path log = env.runDir.resolve("strace-" + target.name() + "-" + System.nanoTime() + ".log");
        Process strace = new ProcessBuilder(
                        STRACE.toString(),
                        "-f",
                        "-qq",
                        "-o",
                        log.toString(),
                        "-e",
                        "trace=fdatasync",
                        "-e",
                        "inject=fdatasync:delay_enter=" + delayUs,
                        "-p",
                        Long.toString(pid))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(
                        env.runDir.resolve("strace.out").toFile()))
                .start();
        env.onClose(() -> stopTracing(strace));
        boolean attached = awaitTraced(pid, strace, Duration.ofSeconds(5));
        String note = (attached ? "every fdatasync of the Raft leader " : "strace did NOT attach (see strace.out) to ")
                + target.name() + " pid " + pid + " delayed " + delayUs / 1000 + " ms (strace pid " + strace.pid()
                + ")";
        return Injection.of(target.name(), note, Faults.longerThanTtl(env), () -> stopTracing(strace));
    }

    /** Waits (bounded) until /proc/PID/status names a tracer, or strace has exited. */
    private static boolean awaitTraced(long pid, Process strace, Duration bound) {
        long deadline = System.nanoTime() + bound.toNanos();
        while (System.nanoTime() < deadline && strace.isAlive()) {
            try {
                for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                    if (line.startsWith("TracerPid:")
                            && !line.substring(10).trim().equals("0")) {
                        return true;
                    }
                }
            } catch (IOException e) {
                return false;
            }
            FaultEnvironment.sleep(50);
        }
        return false;
    }

    /** SIGTERM to strace (it detaches from every thread), bounded; SIGKILL if it does not exit (tracees are released). */
    private static void stopTracing(Process strace) throws InterruptedException {
        if (!strace.isAlive()) {
            return;
        }
        strace.destroy();
        if (!strace.waitFor(15, TimeUnit.SECONDS)) {
            strace.destroyForcibly();
            strace.waitFor(5, TimeUnit.SECONDS);
        }
    }

    private static Optional<String> get(String url) {
        return send(HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(2))
                .GET()
                .build());
    }

    private static Optional<String> post(String url, String body) {
        return send(HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(2))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build());
    }

    private static Optional<String> send(HttpRequest request) {
        try {
            HttpResponse<String> r = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 ? Optional.of(r.body()) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }
}
