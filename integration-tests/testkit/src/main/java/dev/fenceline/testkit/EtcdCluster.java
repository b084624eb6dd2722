package dev.fenceline.testkit;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real etcd cluster (default 3 members) on loopback, each member with its own client and peer port and data
 * folder, so tests can stop, kill, pause, resume, restart and wipe members one by one.
 *
 * <p>The {@code etcd} binary comes from {@code FENCELINE_ETCD_BIN}, else PATH. It is not downloaded:
 * {@code scripts/ensure-etcd.sh} installs Debian's {@code etcd-server etcd-client} when run as root.
 */
public final class EtcdCluster implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(EtcdCluster.class);

    /** How to start a cluster. */
    public static final class Options {
        private final int members;
        private final Path dataRoot;
        private final Duration startTimeout;

        private Options(int members, Path dataRoot, Duration startTimeout) {
            this.members = members;
            this.dataRoot = dataRoot;
            this.startTimeout = startTimeout;
        }

        /** 3 members; data under {@code target/} when run from a module folder, else the system temp folder. */
        public static Options defaults() {
            return new Options(3, null, Duration.ofSeconds(30));
        }

        public Options members(int value) {
            if (value < 1 || value > 7) {
                throw new IllegalArgumentException("members must be between 1 and 7, was " + value);
            }
            return new Options(value, dataRoot, startTimeout);
        }

        public Options dataRoot(Path value) {
            return new Options(members, value, startTimeout);
        }

        public Options startTimeout(Duration value) {
            return new Options(members, dataRoot, value);
        }
    }

    private final Path etcdBin;
    private final Path etcdctlBin;
    private final Path root;
    private final List<EtcdMember> members;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    private volatile boolean closed;

    private EtcdCluster(Path etcdBin, Path etcdctlBin, Path root, List<EtcdMember> members) {
        this.etcdBin = etcdBin;
        this.etcdctlBin = etcdctlBin;
        this.root = root;
        this.members = members;
    }

    public static EtcdCluster start(int members) {
        return start(Options.defaults().members(members));
    }

    public static EtcdCluster start(Options options) {
        Path etcd = binary("etcd", "fenceline.etcd.bin", "FENCELINE_ETCD_BIN");
        Path etcdctl = binary("etcdctl", "fenceline.etcdctl.bin", "FENCELINE_ETCDCTL_BIN");
        Path root;
        try {
            Path base = options.dataRoot != null
                    ? options.dataRoot
                    : Files.isDirectory(Path.of("target"))
                            ? Path.of("target")
                            : Path.of(System.getProperty("java.io.tmpdir"));
            Files.createDirectories(base);
            root = Files.createTempDirectory(base.toAbsolutePath(), "etcd-");
        } catch (IOException e) {
            throw new InfrastructureException("cannot create etcd data folder: " + e.getMessage(), e);
        }
        Reaper.get().deleteOnDeath(root);
        List<EtcdMember> list = new ArrayList<>();
        for (int i = 0; i < options.members; i++) {
            int client = FreePorts.next();
            int peer = FreePorts.next();
            FreePorts.requireFree(client, "etcd member m" + (i + 1) + " client");
            FreePorts.requireFree(peer, "etcd member m" + (i + 1) + " peer");
            list.add(new EtcdMember("m" + (i + 1), client, peer, root.resolve("m" + (i + 1)), etcd));
        }
        EtcdCluster cluster = new EtcdCluster(etcd, etcdctl, root, List.copyOf(list));
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::close, "fenceline-etcd-stop"));
        cluster.bootstrap(options.startTimeout);
        log.info("etcd cluster healthy: {}", cluster.endpointsCsv());
        return cluster;
    }

    /** The binary from the system property, else the env var, else PATH; a clear message when missing. */
    static Path binary(String name, String property, String envVar) {
        String configured = System.getProperty(property, System.getenv(envVar));
        if (configured != null && !configured.isBlank()) {
            Path p = Path.of(configured);
            if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                return p;
            }
            throw new InfrastructureException(name + " is configured as '" + configured + "' (" + property + " / "
                    + envVar + ") but that is not an executable file; unset it to use " + name + " from PATH, or "
                    + "point it at an etcd 3.4+ binary");
        }
        Path p = Processes.onPath(name);
        if (p == null) {
            throw new InfrastructureException(name + " was not found on PATH. "
                    + (Processes.runningAsRoot()
                            ? "Run scripts/ensure-etcd.sh, which runs: apt-get update && apt-get install -y etcd-server etcd-client."
                            : "Not running as root, so it cannot be installed automatically: ask an administrator to run "
                                    + "'sudo apt-get update && sudo apt-get install -y etcd-server etcd-client'")
                    + " Or set " + envVar + " to an etcd 3.4+ binary.");
        }
        return p;
    }

    public List<String> endpoints() {
        return members.stream().map(EtcdMember::clientEndpoint).toList();
    }

    public String endpointsCsv() {
        return String.join(",", endpoints());
    }

    public EtcdMember member(int index) {
        return members.get(index);
    }

    public List<EtcdMember> members() {
        return members;
    }

    /** Waits until every running, unpaused member reports healthy (which in etcd means: it sees a Raft leader). */
    public void awaitHealthy(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "";
        while (System.nanoTime() < deadline) {
            List<String> unhealthy = new ArrayList<>();
            for (EtcdMember m : members) {
                if (m.isRunning() && !m.isPaused() && !isHealthy(m)) {
                    unhealthy.add(m.name());
                }
            }
            if (unhealthy.isEmpty()) {
                return;
            }
            last = "unhealthy: " + unhealthy;
            PostgresServer.sleepQuietly(100);
        }
        throw new InfrastructureException("etcd cluster " + endpointsCsv() + " not healthy within " + timeout + " ("
                + last + "); member logs are under " + root);
    }

    /** True if the member answers /health with a leader known. */
    public boolean isHealthy(EtcdMember member) {
        try {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(URI.create(member.clientEndpoint() + "/health"))
                            .timeout(Duration.ofSeconds(2))
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 && r.body().contains("\"health\":\"true\"");
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Runs {@code etcdctl} (API v3) against all endpoints; returns stdout, fails with stderr on a non-zero exit.
     * The command timeout is 15 s, not etcdctl's 5 s: right after paused members resume, a linearizable read can wait
     * through a Raft re-election, and a test reading the cluster's state then wants the answer, not a timeout.
     */
    public String etcdctl(String... args) {
        List<String> withTimeout = new ArrayList<>(List.of("--command-timeout=15s"));
        withTimeout.addAll(List.of(args));
        return Processes.runOrFail(
                etcdctlCommand(endpointsCsv(), withTimeout.toArray(String[]::new)),
                Duration.ofSeconds(30),
                null,
                Map.of("ETCDCTL_API", "3"));
    }

    /** Like {@link #etcdctl} against the given endpoints, returning the whole result instead of failing. */
    public Processes.Result etcdctlResult(String endpoints, Duration timeout, String... args) {
        return Processes.run(etcdctlCommand(endpoints, args), timeout, null, Map.of("ETCDCTL_API", "3"));
    }

    private List<String> etcdctlCommand(String endpoints, String... args) {
        List<String> cmd = new ArrayList<>(List.of(etcdctlBin.toString(), "--endpoints=" + endpoints));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /**
     * The coordinator rebuilt from nothing: every member killed, every data folder wiped, and a brand-new cluster
     * (new cluster token) started on the same ports, so clients configured with the old endpoints reconnect to it.
     */
    public void rebuild() {
        for (EtcdMember m : members) {
            m.kill();
            m.wipe();
        }
        bootstrap(Duration.ofSeconds(30));
    }

    /** Starts every member as a brand-new cluster (fresh token, so it can never be mistaken for an older one). */
    private void bootstrap(Duration timeout) {
        String token = "fenceline-" + Long.toString(System.nanoTime(), 36);
        String initialCluster =
                members.stream().map(m -> m.name() + "=" + m.peerUrl()).collect(Collectors.joining(","));
        for (EtcdMember m : members) {
            m.configure(initialCluster, token);
            m.launch("new");
        }
        awaitHealthy(timeout);
    }

    /**
     * Brings a wiped member back as a fresh member of the running cluster: removes its old identity and adds it
     * again through the remaining quorum, then starts it with an empty data folder.
     */
    public void rejoin(EtcdMember member) {
        if (member.isRunning()) {
            throw new IllegalStateException("cannot rejoin etcd member " + member.name() + " while it runs");
        }
        // The survivors may still be electing a new Raft leader (the member may have been the leader).
        awaitHealthy(Duration.ofSeconds(30));
        String others = members.stream()
                .filter(m -> m != member && m.isRunning())
                .map(EtcdMember::clientEndpoint)
                .collect(Collectors.joining(","));
        String list = retrying(others, "member", "list");
        for (String line : list.split("\n")) {
            String[] f = line.split(",\\s*");
            if (f.length > 3 && f[2].equals(member.name())) {
                retrying(others, "member", "remove", f[0]);
            }
        }
        retrying(others, "member", "add", member.name(), "--peer-urls=" + member.peerUrl());
        member.launch("existing");
        awaitHealthy(Duration.ofSeconds(30));
    }

    /** Membership changes can be refused for a moment after a leader change; retry a bounded number of times. */
    private String retrying(String endpoints, String... args) {
        Processes.Result last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            List<String> cmd = new ArrayList<>(List.of("--command-timeout=10s"));
            cmd.addAll(List.of(args));
            last = etcdctlResult(endpoints, Duration.ofSeconds(30), cmd.toArray(String[]::new));
            if (last.ok()) {
                return last.stdout();
            }
            PostgresServer.sleepQuietly(1000);
        }
        throw new InfrastructureException("etcdctl " + String.join(" ", args) + " failed 5 times against " + endpoints
                + ": " + last.stderr().strip());
    }

    public Path dataRoot() {
        return root;
    }

    Path etcdBinary() {
        return etcdBin;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (EtcdMember m : members) {
            m.kill();
        }
        Processes.deleteTree(root);
    }
}
