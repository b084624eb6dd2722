package dev.fenceline.sample.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.sample.demo.ChildProcess;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.Reaper;
import dev.fenceline.testkit.TestDatabase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Test harness for the integration tests: runs {@code fenceline} commands and workers as real JVMs from the
 * shaded jar (system property {@code fenceline.jar}, set by failsafe), against a test database and a real
 * 3-member etcd. Everything started is killed by {@link #close()} (and by the testkit's reaper if the test JVM dies).
 */
final class SampleProcesses implements AutoCloseable {
    static final String ELECTION = "settlement";
    private static final List<String> JVM = List.of("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");

    record Result(int exit, String stdout, String stderr) {}

    final TestDatabase db;
    final EtcdCluster etcd;
    /** What workers and CLI commands connect with: PostgreSQL directly, or a pooler in front of it. */
    final String jdbcUrl;
    /** PostgreSQL directly (set-up steps such as migrate and seed when {@link #jdbcUrl} goes through a pooler). */
    final String directJdbcUrl;

    final Path dir;
    private final Map<String, ChildProcess> workers = new ConcurrentHashMap<>();

    SampleProcesses(TestDatabase db, EtcdCluster etcd, String name) throws Exception {
        this(db, etcd, name, null);
    }

    /** {@code jdbcUrl}: the URL workers and CLI commands use (e.g. through a pooler); null = PostgreSQL directly. */
    SampleProcesses(TestDatabase db, EtcdCluster etcd, String name, String jdbcUrl) throws Exception {
        this.db = db;
        this.etcd = etcd;
        this.directJdbcUrl = db.jdbcUrl() + "?user=" + db.user();
        this.jdbcUrl = jdbcUrl == null ? directJdbcUrl : jdbcUrl;
        this.dir = Files.createDirectories(Path.of("target", "it-work", name + "-" + System.currentTimeMillis())
                .toAbsolutePath());
    }

    static String jar() {
        String jar = System.getProperty("fenceline.jar");
        if (jar == null || !Files.isRegularFile(Path.of(jar))) {
            throw new IllegalStateException(
                    "system property fenceline.jar must name the shaded jar (mvn verify sets it); got " + jar);
        }
        return jar;
    }

    List<String> common() {
        return common(etcd.endpointsCsv());
    }

    private List<String> common(String etcdEndpoints) {
        return List.of("--jdbc-url", jdbcUrl, "--etcd", etcdEndpoints, "--election", ELECTION);
    }

    /** Runs a CLI command as a separate JVM with the common options appended and waits for it. */
    Result cli(String... args) throws InterruptedException {
        List<String> a = new ArrayList<>(List.of(args));
        a.addAll(common());
        return cliRaw(a);
    }

    /** Like {@link #cli} but connected to PostgreSQL directly, whatever {@link #jdbcUrl} is. */
    Result cliDirect(String... args) throws InterruptedException {
        List<String> a = new ArrayList<>(List.of(args));
        a.addAll(List.of("--jdbc-url", directJdbcUrl, "--etcd", etcd.endpointsCsv(), "--election", ELECTION));
        return cliRaw(a);
    }

    /** Runs a CLI command with every worker's history file passed as --history. */
    Result cliWithHistories(String... args) throws InterruptedException {
        List<String> a = new ArrayList<>(List.of(args));
        for (Path h : histories()) {
            a.add("--history");
            a.add(h.toString());
        }
        a.addAll(common());
        return cliRaw(a);
    }

    /** Runs a CLI command as a separate JVM exactly as given. */
    Result cliRaw(List<String> args) throws InterruptedException {
        try (ChildProcess p = ChildProcess.start("cli", ChildProcess.fencelineCommand(jar(), JVM, args), null, null)) {
            Integer exit = p.waitFor(Duration.ofSeconds(60));
            if (exit == null) {
                throw new AssertionError(
                        "fenceline " + args + " did not finish within 60 s; stderr:\n" + p.stderrText());
            }
            return new Result(exit, p.stdoutText(), p.stderrText());
        }
    }

    Path history(String id) {
        return dir.resolve(id + ".history.jsonl");
    }

    ChildProcess startWorker(String id, String... extra) {
        return startWorkerWithEtcd(etcd.endpointsCsv(), id, extra);
    }

    /** A worker whose --etcd is {@code etcdEndpoints} instead of this harness's cluster. */
    ChildProcess startWorkerWithEtcd(String etcdEndpoints, String id, String... extra) {
        List<String> a = new ArrayList<>(
                List.of("worker", "--id", id, "--history-file", history(id).toString()));
        a.addAll(List.of(extra));
        a.addAll(common(etcdEndpoints));
        ChildProcess p =
                ChildProcess.start(id, ChildProcess.fencelineCommand(jar(), JVM, a), dir.resolve(id + ".log"), null);
        Reaper.get().watch(p.pid());
        workers.put(id, p);
        return p;
    }

    ChildProcess worker(String id) {
        return workers.get(id);
    }

    List<Path> histories() {
        return workers.keySet().stream().sorted().map(this::history).toList();
    }

    ElectionAdmin admin() {
        return ElectionAdmin.connect(ElectionConfig.builder()
                .endpoints(etcd.endpoints())
                .meterRegistry(new SimpleMeterRegistry())
                .closeOnShutdown(false)
                .build());
    }

    static Optional<LeaderRecord> leader(ElectionAdmin admin) {
        try {
            return admin.leader(ELECTION);
        } catch (RuntimeException e) {
            return Optional.empty();
        }
    }

    long scalar(String sql) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    long settled() throws SQLException {
        return scalar("SELECT count(*) FROM settlement.payment WHERE status = 'SETTLED'");
    }

    long pending() throws SQLException {
        return scalar("SELECT count(*) FROM settlement.payment WHERE status = 'PENDING'");
    }

    /** The fence's mark (highest accepted term) of the sample's resource. */
    long mark() throws SQLException {
        return scalar("SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = '" + ELECTION + "'");
    }

    long batchesOfTerm(long term) throws SQLException {
        return scalar("SELECT count(*) FROM settlement.settlement_batch WHERE term = " + term);
    }

    /**
     * Waits (bounded) until no payment is pending, checks that {@code worker} is still running, stops the workers and
     * runs {@code verify} over their histories, which must pass: "everything settled exactly once, by a live worker".
     */
    void awaitAllSettledByThenVerify(String worker) throws Exception {
        await("the waiting worker settles everything")
                .atMost(Duration.ofSeconds(90))
                .pollInterval(Duration.ofMillis(200))
                .until(() -> pending() == 0);
        assertThat(worker(worker).isAlive()).isTrue();
        stopWorkers();
        Result verify = cliWithHistories("verify");
        assertThat(verify.exit()).as(verify.stdout() + verify.stderr()).isZero();
    }

    /** SIGTERM (after SIGCONT) every live worker and wait; returns nothing, kills stragglers. */
    void stopWorkers() throws InterruptedException {
        for (ChildProcess w : workers.values()) {
            if (w.isAlive()) {
                w.signal("CONT");
                w.signal("TERM");
            }
        }
        for (ChildProcess w : workers.values()) {
            if (w.waitFor(Duration.ofSeconds(15)) == null) {
                w.close();
            }
            Reaper.get().forget(w.pid());
        }
    }

    @Override
    public void close() throws InterruptedException {
        stopWorkers();
        workers.values().forEach(ChildProcess::close);
    }
}
