package dev.fenceline.sample.demo;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.sample.audit.AuditReports;
import dev.fenceline.sample.audit.Table;
import dev.fenceline.sample.db.SampleDatabase;
import dev.fenceline.sample.db.SampleMigrations;
import dev.fenceline.sample.db.Seeder;
import dev.fenceline.sample.verify.Verifier;
import dev.fenceline.sample.verify.VerifyLoader;
import dev.fenceline.sample.worker.Worker;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.Reaper;
import dev.fenceline.testkit.TestDatabase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The self-contained demo: real PostgreSQL + a real 3-member etcd (from the testkit), three worker JVMs, and
 * a scripted, deterministic story — the leader settles; it is frozen with SIGSTOP <em>inside</em> a batch
 * (after its updates, before its commit) for longer than its TTL; a new leader with a higher term takes over;
 * the old leader is resumed, tries to commit its stale batch, and PostgreSQL rejects it (audited). Then
 * verify, the audit table and a summary. Everything it starts is stopped in {@code finally} and by a
 * shutdown hook (and by the testkit's reaper if this JVM is killed).
 */
public final class Demo {
    public static final String ELECTION = "settlement";

    public record Options(int workers, int payments, int batchSize, long intervalMs, long ttlMs, Path workDir) {}

    private final Options o;
    private final PrintStream out;
    private final long t0 = System.nanoTime();
    private final List<ChildProcess> workers = new ArrayList<>();
    private final List<Path> histories = new ArrayList<>();
    private final Map<String, String> summary = new LinkedHashMap<>();

    public Demo(Options o, PrintStream out) {
        this.o = o;
        this.out = out;
    }

    private void say(String fmt, Object... args) {
        out.printf("[%5.1fs] %s%n", (System.nanoTime() - t0) / 1e9, String.format(fmt, args));
        out.flush();
    }

    private static String shortKey(String key) {
        return key == null ? "?" : key.length() > 19 ? key.substring(0, 19) + "…" : key;
    }

    public int run() throws Exception {
        Files.createDirectories(o.workDir());
        Thread hook = new Thread(this::stopWorkers, "demo-stop-workers");
        Runtime.getRuntime().addShutdownHook(hook);
        out.println("== Fenceline demo: leader election on etcd, fencing enforced by PostgreSQL ==");
        out.println("   logs and histories: " + o.workDir());
        PostgresServer pg = null;
        EtcdCluster etcd = null;
        try {
            say("starting PostgreSQL ...");
            pg = PostgresServer.start(PostgresServer.Options.defaults());
            TestDatabase tdb = pg.createDatabase("fenceline_demo");
            String jdbcUrl = tdb.jdbcUrl() + "?user=" + tdb.user() + "&ApplicationName=fenceline-demo";
            say("PostgreSQL ready: %s", tdb.jdbcUrl());
            say("starting a 3-member etcd cluster ...");
            etcd = EtcdCluster.start(EtcdCluster.Options.defaults().members(3).dataRoot(o.workDir()));
            say("etcd ready: %s", etcd.endpointsCsv());
            try (SampleDatabase db = SampleDatabase.open(jdbcUrl, null, null, "fenceline-demo", 3);
                    ElectionAdmin admin = ElectionAdmin.connect(ElectionConfig.builder()
                            .endpoints(etcd.endpoints())
                            .meterRegistry(new SimpleMeterRegistry())
                            .closeOnShutdown(false)
                            .build())) {
                SampleMigrations.migrate(db.dataSource());
                Seeder.seed(db.dataSource(), o.payments(), 20);
                say(
                        "migrated (schemas fencing + settlement, resource '%s' fenced) and seeded %d PENDING payments",
                        ELECTION, o.payments());
                return story(db, admin, jdbcUrl, etcd.endpointsCsv());
            } finally {
                tdb.close();
            }
        } finally {
            stopWorkers();
            if (etcd != null) {
                etcd.close();
            }
            if (pg != null) {
                pg.close();
            }
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // already shutting down
            }
        }
    }

    private int story(SampleDatabase db, ElectionAdmin admin, String jdbcUrl, String etcdCsv) throws Exception {
        // 1. three workers
        for (int i = 1; i <= o.workers(); i++) {
            String id = "w" + i;
            Path hist = o.workDir().resolve(id + ".history.jsonl");
            histories.add(hist);
            List<String> args = List.of(
                    "worker",
                    "--id",
                    id,
                    "--jdbc-url",
                    jdbcUrl,
                    "--etcd",
                    etcdCsv,
                    "--election",
                    ELECTION,
                    "--ttl-ms",
                    Long.toString(o.ttlMs()),
                    "--batch-size",
                    Integer.toString(o.batchSize()),
                    "--interval-ms",
                    Long.toString(o.intervalMs()),
                    "--history-file",
                    hist.toString(),
                    "--debug-pause-inside-batch-file",
                    pauseFile(id).toString());
            ChildProcess p = ChildProcess.start(
                    id,
                    ChildProcess.fencelineCommand(
                            ChildProcess.fencelineClassPath(),
                            List.of("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"),
                            args),
                    o.workDir().resolve(id + ".log"),
                    line -> {
                        if (line.contains("REJECTED by PostgreSQL")) {
                            say("  %s log: %s", id, line.substring(Math.max(0, line.indexOf("worker "))));
                        }
                    });
            Reaper.get().watch(p.pid());
            workers.add(p);
        }
        say(
                "started %d worker processes %s (TTL %d ms, batches of %d every %d ms)",
                o.workers(),
                workers.stream().map(w -> w.name() + "[pid " + w.pid() + "]").toList(),
                o.ttlMs(),
                o.batchSize(),
                o.intervalMs());

        // 2. the first leader settles
        LeaderRecord first = awaitLeader(admin, 0, Duration.ofSeconds(45));
        say("leader elected: %s with term %d (lease %s)", first.leaderId(), first.term(), first.leaseIdHex());
        await("the leader to settle a few batches", Duration.ofSeconds(30), () -> batchesOfTerm(db, first.term()) >= 3);
        say("%s is settling: %s", first.leaderId(), progress(db));

        // 3. freeze it inside a batch
        ChildProcess old = worker(first.leaderId());
        say(
                "STEP 1: freeze leader %s INSIDE a batch: it has checked its lease and written its updates, not yet committed",
                old.name());
        Files.writeString(pauseFile(old.name()), "pause");
        String marker = old.awaitLine(l -> l.startsWith(Worker.PAUSE_MARKER), Duration.ofSeconds(30));
        if (marker == null) {
            throw new IllegalStateException(
                    old.name() + " never reached the pause point inside a batch (see " + o.workDir() + ")");
        }
        String staleKey = field(marker, "batch_key");
        old.signal("STOP");
        long frozenAt = System.nanoTime();
        say(
                "  %s paused in batch %s (term %d); SIGSTOP sent to pid %d: the JVM, its lease keep-alive and its open "
                        + "transaction are frozen",
                old.name(), shortKey(staleKey), first.term(), old.pid());

        // 4. a new leader with a higher term
        say(
                "STEP 2: wait for %s's lease (TTL %d ms) to expire and a new leader to be elected ...",
                old.name(), o.ttlMs());
        LeaderRecord second = awaitLeader(admin, first.term(), Duration.ofSeconds(45));
        double failover = (System.nanoTime() - frozenAt) / 1e9;
        say("  new leader: %s with term %d, %.1f s after the freeze", second.leaderId(), second.term(), failover);
        await("the new leader to commit a batch", Duration.ofSeconds(30), () -> batchesOfTerm(db, second.term()) >= 1);
        say(
                "  %s settles under term %d; the database mark is now %d: %s",
                second.leaderId(), second.term(), db.mark(ELECTION), progress(db));

        // 5. resume the old leader: its stale commit is rejected by PostgreSQL
        say(
                "STEP 3: resume %s (SIGCONT) after %.1f s frozen: it still believes it holds term %d and tries to commit ...",
                old.name(), (System.nanoTime() - frozenAt) / 1e9, first.term());
        Files.deleteIfExists(pauseFile(old.name()));
        old.signal("CONT");
        await(
                "PostgreSQL to reject and audit the stale batch",
                Duration.ofSeconds(30),
                () -> rejectionsOfTerm(db, first.term()) >= 1);
        long committedStale = committedWithKeyAndTerm(db, staleKey, first.term());
        say(
                "  PostgreSQL REJECTED the stale write of %s: offered term %d < highest accepted %d; audited in fencing.rejected_write"
                        + " (its batch committed: %s)",
                old.name(), first.term(), db.mark(ELECTION), committedStale == 0 ? "no" : "YES!");

        // 6. drain and check
        say("STEP 4: let the workers drain the remaining payments ...");
        long lastReport = System.nanoTime();
        long drainDeadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (db.counts(ELECTION).get("pending") > 0) {
            if (System.nanoTime() > drainDeadline) {
                throw new IllegalStateException("timed out after 90 s waiting for all payments to be settled ("
                        + progress(db) + "); worker logs in " + o.workDir());
            }
            checkWorkersAlive();
            if (System.nanoTime() - lastReport > Duration.ofSeconds(3).toNanos()) {
                say("  ... %s", progress(db));
                lastReport = System.nanoTime();
            }
            Thread.sleep(100);
        }
        say("  done: %s", progress(db));
        Verifier.Report report = Verifier.check(VerifyLoader.load(db.dataSource(), ELECTION, List.of()));
        stopWorkers();
        // with the workers stopped (histories complete), cross-check the histories as well
        report = Verifier.check(VerifyLoader.load(db.dataSource(), ELECTION, histories));
        out.println();
        out.println("verify: " + (report.ok() ? "OK: " + report.summary() : "FAILED"));
        report.violations().forEach(v -> out.println("  VIOLATION " + v));
        out.println();
        out.println("audit rejected (fencing.rejected_write):");
        Table rejected = AuditReports.rejected(db.dataSource(), ELECTION, null);
        out.print(project(
                        rejected,
                        List.of(
                                "rejected_at",
                                "offered_term",
                                "highest_accepted",
                                "leader_id",
                                "table_name",
                                "operation",
                                "business_key"))
                .text());
        out.println();
        out.println("audit terms (fencing.term_history + settlement_batch):");
        out.print(project(
                        AuditReports.terms(db.dataSource(), ELECTION),
                        List.of("term", "leader_id", "accepted_at", "batches", "payments", "rejected_writes"))
                .text());

        Map<String, Long> c = db.counts(ELECTION);
        summary.put("payments settled", c.get("settled") + " of " + o.payments() + " (each exactly once)");
        summary.put("batches committed", String.valueOf(c.get("batches")));
        summary.put("first leader", first.leaderId() + " (term " + first.term() + "), frozen inside a batch for > TTL");
        summary.put(
                "new leader",
                second.leaderId() + " (term " + second.term() + "), elected " + String.format("%.1f s", failover)
                        + " after the freeze");
        summary.put(
                "stale batch of " + old.name(),
                shortKey(staleKey) + " rejected by PostgreSQL and audited (commits: " + committedStale + ")");
        summary.put("rejected writes audited", String.valueOf(c.get("rejected_writes")));
        summary.put("verify", report.ok() ? "OK" : report.violations().size() + " violation(s)");
        summary.put("elapsed", String.format("%.1f s", (System.nanoTime() - t0) / 1e9));
        List<List<Object>> rows = new ArrayList<>();
        summary.forEach((k, v) -> rows.add(List.of(k, v)));
        out.println();
        out.println("summary:");
        out.print(new Table(List.of("what", "result"), rows).text());
        boolean ok = report.ok() && committedStale == 0 && c.get("pending") == 0;
        out.println(ok ? "DEMO OK" : "DEMO FAILED");
        return ok ? 0 : 1;
    }

    private static Table project(Table t, List<String> cols) {
        List<Integer> idx = cols.stream().map(t.columns()::indexOf).toList();
        List<List<Object>> rows = new ArrayList<>();
        for (List<Object> r : t.rows()) {
            List<Object> n = new ArrayList<>();
            for (int i : idx) {
                Object v = r.get(i);
                n.add(v instanceof String s && s.startsWith("sha256:") ? shortKey(s) : v);
            }
            rows.add(n);
        }
        return new Table(cols, rows);
    }

    private Path pauseFile(String id) {
        return o.workDir().resolve(id + ".pause");
    }

    private ChildProcess worker(String id) {
        return workers.stream()
                .filter(w -> w.name().equals(id))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no worker named " + id));
    }

    private static String field(String line, String name) {
        for (String part : line.split(" ")) {
            if (part.startsWith(name + "=")) {
                return part.substring(name.length() + 1);
            }
        }
        return null;
    }

    private LeaderRecord awaitLeader(ElectionAdmin admin, long aboveTerm, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        Exception last = null;
        while (System.nanoTime() < deadline) {
            try {
                Optional<LeaderRecord> r = admin.leader(ELECTION);
                if (r.isPresent() && r.get().term() > aboveTerm) {
                    return r.get();
                }
            } catch (RuntimeException e) {
                last = e;
            }
            checkWorkersAlive();
            Thread.sleep(50);
        }
        throw new IllegalStateException("no leader with a term above " + aboveTerm + " within " + timeout
                + (last == null ? "" : " (last error: " + last.getMessage() + ")") + "; worker logs in " + o.workDir());
    }

    private interface Check {
        boolean ok() throws Exception;
    }

    private void await(String what, Duration timeout, Check c) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (c.ok()) {
                return;
            }
            checkWorkersAlive();
            Thread.sleep(50);
        }
        throw new IllegalStateException("timed out after " + timeout.toSeconds() + " s waiting for " + what + " ("
                + progress(null) + "); worker logs in " + o.workDir());
    }

    private void checkWorkersAlive() {
        for (ChildProcess w : workers) {
            if (!w.isAlive()) {
                throw new IllegalStateException("worker " + w.name() + " exited unexpectedly; its log: "
                        + o.workDir().resolve(w.name() + ".log") + "\n" + tail(w.stderrText(), 15));
            }
        }
    }

    private static String tail(String text, int lines) {
        String[] l = text.split("\n");
        return String.join("\n", java.util.Arrays.copyOfRange(l, Math.max(0, l.length - lines), l.length));
    }

    private String progress(SampleDatabase db) {
        if (db == null) {
            return "see logs";
        }
        try {
            Map<String, Long> c = db.counts(ELECTION);
            return c.get("settled") + " settled / " + c.get("pending") + " pending in " + c.get("batches") + " batches";
        } catch (SQLException e) {
            return "progress unavailable: " + e.getMessage();
        }
    }

    private static long scalar(SampleDatabase db, String sql, Object... args) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static long batchesOfTerm(SampleDatabase db, long term) throws SQLException {
        return scalar(db, "SELECT count(*) FROM settlement.settlement_batch WHERE term = ?", term);
    }

    private static long rejectionsOfTerm(SampleDatabase db, long term) throws SQLException {
        return scalar(
                db,
                "SELECT count(*) FROM fencing.rejected_write WHERE resource = ? AND offered_term = ?",
                ELECTION,
                term);
    }

    private static long committedWithKeyAndTerm(SampleDatabase db, String key, long term) throws SQLException {
        return scalar(
                db,
                "SELECT count(*) FROM settlement.settlement_batch WHERE idempotency_key = ? AND term = ?",
                key,
                term);
    }

    /** SIGTERM every worker (graceful: finish batch, resign, exit 0), then kill what is left. */
    private synchronized void stopWorkers() {
        for (ChildProcess w : workers) {
            try {
                Files.deleteIfExists(pauseFile(w.name())); // a worker paused inside a batch must be able to finish
            } catch (java.io.IOException ignored) {
                // best effort
            }
        }
        for (ChildProcess w : workers) {
            if (w.isAlive()) {
                w.signal("CONT");
                w.signal("TERM");
            }
        }
        for (ChildProcess w : workers) {
            try {
                if (w.waitFor(Duration.ofMillis(o.ttlMs() + 2000)) == null) {
                    w.close();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                w.close();
            }
            Reaper.get().forget(w.pid());
        }
    }
}
