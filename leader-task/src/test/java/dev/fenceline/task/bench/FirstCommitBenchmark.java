package dev.fenceline.task.bench;

import dev.fenceline.migrations.FencingMigrations;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.TestDatabase;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Benchmark (not a test): the first fenced commit after winning, each sample in a FRESH JVM, with the task's warm
 * start on ({@code warm}) and off ({@code cold}), interleaved. Starts a durable PostgreSQL and a 3-member etcd from the
 * testkit. Run by {@code leader-task/bench-first-commit.sh}. Properties: {@code bench.samples} (per mode, default 20),
 * {@code bench.modes} (default warm,cold), {@code bench.jvmArgs} (added to each child JVM, e.g. a class-loading log).
 */
public final class FirstCommitBenchmark {
    private static final Pattern SAMPLE = Pattern.compile("SAMPLE mode=(\\w+) first_commit_ns=(\\d+) wake_ns=(\\d+)"
            + " check_plan_ns=(\\d+) transaction_ns=(\\d+) start_to_won_ns=(\\d+) enter_ns=(\\d+) work_ns=(\\d+)"
            + " commit_ns=(\\d+) classes_loaded=(\\d+) task_cpu_ns=(\\d+)");

    private FirstCommitBenchmark() {}

    public static void main(String[] args) throws Exception {
        int samples = Integer.getInteger("bench.samples", 20);
        List<String> modes =
                List.of(System.getProperty("bench.modes", "warm,cold").split(","));
        String resource = "first-commit";
        Map<String, List<long[]>> results = new LinkedHashMap<>();
        modes.forEach(m -> results.put(m, new ArrayList<>()));
        try (PostgresServer server =
                        PostgresServer.start(PostgresServer.Options.defaults().durable(true));
                EtcdCluster etcd = EtcdCluster.start(3)) {
            TestDatabase db = server.createDatabase("first_commit");
            FencingMigrations.migrate(db.dataSource());
            try (Connection c = DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password());
                    Statement s = c.createStatement()) {
                s.execute("CREATE TABLE public.entry (id bigserial PRIMARY KEY, term bigint NOT NULL)");
                s.execute("SELECT fencing.protect_table('public.entry', '" + resource + "')");
            }
            String serverLog = System.getProperty("bench.serverLog", "").trim();
            if (!serverLog.isEmpty()) {
                // Every statement's duration (COMMIT included: its WAL flush) and the server's LOG lines, e.g. a
                // scratch copy of the fencing functions with RAISE LOG step timestamps; copied to bench.serverLog.
                try (Connection c = server.superuserConnection(db.name());
                        Statement s = c.createStatement()) {
                    s.execute("ALTER SYSTEM SET log_min_messages = 'log'");
                    s.execute("ALTER SYSTEM SET log_min_duration_statement = 0");
                    s.execute("ALTER SYSTEM SET log_line_prefix = '%m [%p] %a '");
                    s.execute("SELECT pg_reload_conf()");
                }
            }
            String java =
                    Path.of(System.getProperty("java.home"), "bin", "java").toString();
            String cp = System.getProperty("java.class.path");
            System.out.printf(
                    "%d samples per mode, one fresh JVM each (%s), durable PostgreSQL, 3-member etcd%n", samples, java);
            for (int i = 0; i < samples; i++) {
                List<String> order = new ArrayList<>(modes);
                Collections.rotate(order, i);
                for (String mode : order) {
                    List<String> command =
                            new ArrayList<>(List.of(java, "-cp", cp, "-Dlogback.configurationFile=bench-logback.xml"));
                    String jvmArgs = System.getProperty("bench.jvmArgs", "").trim();
                    if (!jvmArgs.isEmpty()) {
                        command.addAll(List.of(jvmArgs.split("\\s+")));
                    }
                    command.addAll(List.of(
                            FirstCommitChild.class.getName(),
                            db.jdbcUrl(),
                            db.user(),
                            db.password() == null ? "" : db.password(),
                            etcd.endpointsCsv(),
                            resource,
                            mode));
                    Process p = new ProcessBuilder(command)
                            .redirectErrorStream(true)
                            .start();
                    long[] sample = null;
                    StringBuilder out = new StringBuilder();
                    try (BufferedReader r =
                            new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                        for (String line; (line = r.readLine()) != null; ) {
                            out.append(line).append('\n');
                            if (line.startsWith("TRACE")) {
                                System.out.println("  " + line);
                            }
                            Matcher m = SAMPLE.matcher(line);
                            if (m.find()) {
                                sample = new long[] {
                                    Long.parseLong(m.group(2)),
                                    Long.parseLong(m.group(3)),
                                    Long.parseLong(m.group(4)),
                                    Long.parseLong(m.group(5)),
                                    Long.parseLong(m.group(6)),
                                    Long.parseLong(m.group(7)),
                                    Long.parseLong(m.group(8)),
                                    Long.parseLong(m.group(9)),
                                    Long.parseLong(m.group(10)),
                                    Long.parseLong(m.group(11))
                                };
                            }
                        }
                    }
                    if (!p.waitFor(90, TimeUnit.SECONDS)) {
                        p.destroyForcibly();
                    }
                    if (sample == null) {
                        System.out.println("sample failed (" + mode + "):\n" + out);
                        continue;
                    }
                    results.get(mode).add(sample);
                    System.out.printf(
                            "  %-4s #%-2d first commit %7.1f ms (wake %.1f, mark+plan %.1f, transaction %.1f ="
                                    + " borrow+enter %.1f + work %.1f + commit %.1f; task thread CPU %.1f ms; %d classes loaded meanwhile;"
                                    + " JVM start to won %.0f ms)%n",
                            mode,
                            i + 1,
                            ms(sample[0]),
                            ms(sample[1]),
                            ms(sample[2]),
                            ms(sample[3]),
                            ms(sample[5]),
                            ms(sample[6]),
                            ms(sample[7]),
                            ms(sample[9]),
                            sample[8],
                            ms(sample[4]));
                }
            }
            if (!serverLog.isEmpty()) {
                Files.copy(server.logFile(), Path.of(serverLog), StandardCopyOption.REPLACE_EXISTING);
                System.out.println("server log copied to " + serverLog);
            }
            System.out.printf(
                    "%nload average at the end: %s%n",
                    Files.readString(Path.of("/proc/loadavg")).trim());
            System.out.println("| mode | n | first commit after winning p50 | p99 | max | wake p50 | mark+plan p50 |"
                    + " transaction p50 | transaction p99 | task thread CPU p50 | p99 | classes loaded p50 |");
            System.out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (var e : results.entrySet()) {
                List<long[]> s = e.getValue();
                System.out.printf(
                        "| %s | %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms |"
                                + " %.1f ms | %.1f ms | %.0f |%n",
                        e.getKey(),
                        s.size(),
                        pct(s, 0, 50),
                        pct(s, 0, 99),
                        pct(s, 0, 100),
                        pct(s, 1, 50),
                        pct(s, 2, 50),
                        pct(s, 3, 50),
                        pct(s, 3, 99),
                        pct(s, 9, 50),
                        pct(s, 9, 99),
                        pct(s, 8, 50) * 1e6);
            }
        }
        System.exit(0);
    }

    static double ms(long nanos) {
        return nanos / 1e6;
    }

    /** Nearest-rank percentile of column {@code col}. */
    static double pct(List<long[]> samples, int col, int p) {
        if (samples.isEmpty()) {
            return Double.NaN;
        }
        List<Long> v = new ArrayList<>();
        samples.forEach(s -> v.add(s[col]));
        Collections.sort(v);
        int rank = (int) Math.ceil(p / 100.0 * v.size());
        return ms(v.get(Math.max(0, Math.min(v.size() - 1, rank - 1))));
    }
}
