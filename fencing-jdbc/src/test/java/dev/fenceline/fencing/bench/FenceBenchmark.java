package dev.fenceline.fencing.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencedWriterConfig;
import dev.fenceline.fencing.FencingToken;
import dev.fenceline.migrations.FencingMigrations;
import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * What fencing costs: the same business transaction unfenced, through the {@link FencedWriter} (writer mode) and as
 * raw JDBC on a protected table (trigger mode: {@code SET LOCAL fencing.term} in every transaction, the only way a
 * raw transaction carries a term), interleaved in rounds, at 1/4/16 connections, for a single-row transaction and a 100-row batch,
 * against a DURABLE PostgreSQL (fsync, synchronous_commit on), with the native guard when it is installed
 * ({@code -Dbench.guard=plpgsql} measures the PL/pgSQL one).
 *
 * <p>Not a test. Run: {@code fencing-jdbc/bench.sh} (installs the modules, then {@code mvn -pl fencing-jdbc
 * test-compile exec:java@fence-bench})
 * (-Dbench.seconds=1 -Dbench.rounds=10 -Dbench.warmup=2 -Dbench.connections=1,4,16
 * -Dbench.kinds=single,batch,statements,rewritten -Dbench.guard=auto|native|plpgsql).
 * Per cell: tps = all transactions / all time of the mode; "median round ratio" = median over rounds of the ratio
 * measured back to back within a round (robust against bursts of load from other processes on the machine).
 *
 * <p>Business transactions (identical SQL in every mode, only the table differs):
 * <ul>
 *   <li>single: {@code UPDATE account SET balance = balance + 1 WHERE id = ?} on a random one of 10 000 rows;</li>
 *   <li>batch: one {@code INSERT INTO entry (account, amount) VALUES (?, ?), ... } of 100 rows;</li>
 *   <li>statements: a JDBC batch of 100 {@code INSERT INTO entry (account, amount) VALUES (?, ?)} (100 statements
 *       in one round trip, so the statement trigger fires 100 times per transaction: its worst case);</li>
 *   <li>rewritten: the same JDBC batch with pgjdbc's {@code reWriteBatchedInserts=true} (sent as a few multi-row
 *       INSERTs, so the trigger fires a few times).</li>
 * </ul>
 */
public final class FenceBenchmark {
    private static final int ACCOUNTS = 10_000;
    /** -Dbench.guard=auto|native|plpgsql: which fencing.guard() the fenced tables run (auto: the migration's choice). */
    private static final String GUARD = System.getProperty("bench.guard", "auto");
    /** -Dbench.warmup=2: seconds per mode before each cell's measured rounds (JIT and plan caches settle). */
    private static final int WARMUP_SECONDS = Integer.getInteger("bench.warmup", 2);

    private static final int BATCH = 100;
    private static final long TERM = 7;

    /**
     * UNFENCED: plain table, no trigger. CONTROL: the same on a second identical plain table — its "ratio" shows how
     * far this machine's noise alone moves a ratio (an A/A test). WRITER: {@link FencedWriter} on a protected table
     * (its one mode: every transaction's first statement sets the term for that transaction and reads the mark; the
     * guard enters at the first write). TRIGGER_SET_LOCAL: raw JDBC on a protected table sending
     * {@code SET LOCAL fencing.term} in every transaction (same round trip, one more statement). The marks of both
     * resources are at the term before the first cell (advanced once, committed), so no measured transaction advances.
     */
    enum Mode {
        UNFENCED("unfenced", "plain"),
        CONTROL("unfenced again (A/A control)", "plain2"),
        WRITER("writer mode", "writer"),
        TRIGGER_SET_LOCAL("trigger mode, SET LOCAL per transaction", "trigger");

        final String label;
        /** Table suffix: account_&lt;suffix&gt; and entry_&lt;suffix&gt;. */
        final String suffix;

        Mode(String label, String suffix) {
            this.label = label;
            this.suffix = suffix;
        }
    }

    enum Kind {
        SINGLE("single-row UPDATE"),
        BATCH("100-row INSERT (one statement)"),
        STATEMENTS("100 single-row INSERTs (JDBC batch)"),
        REWRITTEN("100 single-row INSERTs (JDBC batch, reWriteBatchedInserts=true)");

        final String label;

        Kind(String label) {
            this.label = label;
        }
    }

    private static final String MULTI_ROW_VALUES = String.join(", ", java.util.Collections.nCopies(BATCH, "(?, ?)"));

    public static void main(String[] args) throws Exception {
        int seconds = Integer.getInteger("bench.seconds", 1);
        int rounds = Integer.getInteger("bench.rounds", 10);
        String[] conns = System.getProperty("bench.connections", "1,4,16").split(",");
        Instant started = Instant.now();
        String guardImplementation;
        String loadAtStart = loadAverage();
        List<String> rows = new ArrayList<>();
        try (PostgresServer server = PostgresServer.start(PostgresServer.Options.defaults()
                        .durable(!"false".equals(System.getProperty("bench.durable"))));
                TestDatabase db = server.createDatabase("fence_bench")) {
            setUp(db);
            guardImplementation = guardImplementation(db);
            System.out.println("PostgreSQL (durable): " + settings(db) + "; fencing.guard(): " + guardImplementation);
            for (String k : System.getProperty("bench.kinds", "single,batch,statements,rewritten")
                    .split(",")) {
                Kind kind = Kind.valueOf(k.strip().toUpperCase(Locale.ROOT));
                for (String c : conns) {
                    int n = Integer.parseInt(c.strip());
                    rows.add(cell(db, kind, n, seconds, rounds));
                    System.out.println(rows.get(rows.size() - 1));
                }
            }
        }
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "Fence benchmark %s, %d rounds x %ds per mode, interleaved (order rotated every"
                        + " round); fencing.guard(): %s%n",
                started,
                rounds,
                seconds,
                guardImplementation);
        System.out.println(
                "ratio = fenced tps / unfenced tps over all rounds; in brackets the median over rounds of the"
                        + " ratio measured back to back within a round");
        StringBuilder header = new StringBuilder("| transaction | connections | tps unfenced |");
        StringBuilder rule = new StringBuilder("|---|---:|---:|");
        for (Mode m : FENCED) {
            header.append(" tps ").append(m.label).append(" | ratio |");
            rule.append("---:|---:|");
        }
        System.out.println(header);
        System.out.println(rule);
        rows.forEach(System.out::println);
        System.out.println();
        System.out.println(
                "CPU per transaction (µs): PostgreSQL backends (from /proc, 10 ms ticks summed over all rounds)"
                        + " and client threads (JVM thread CPU time); insensitive to other load on the machine");
        StringBuilder cpuHeader = new StringBuilder("| transaction | connections |");
        StringBuilder cpuRule = new StringBuilder("|---|---:|");
        for (Mode m : Mode.values()) {
            cpuHeader.append(" server ").append(m.label).append(" |");
            cpuRule.append("---:|");
        }
        for (Mode m : Mode.values()) {
            cpuHeader.append(" client ").append(m.label).append(" |");
            cpuRule.append("---:|");
        }
        System.out.println(cpuHeader);
        System.out.println(cpuRule);
        CPU.forEach(System.out::println);
        System.out.printf(
                "total %ds; load average at start %s, at end %s; %d CPUs%n",
                Duration.between(started, Instant.now()).toSeconds(),
                loadAtStart,
                loadAverage(),
                Runtime.getRuntime().availableProcessors());
    }

    private static void setUp(TestDatabase db) throws SQLException {
        FencingMigrations.migrate(db.dataSource());
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            switch (GUARD) {
                case "auto" -> {} // whatever the migration chose: native when the library loads
                case "native" -> s.execute("SELECT fencing.use_native_guard()");
                case "plpgsql" -> s.execute("SELECT fencing.use_plpgsql_guard()");
                default ->
                    throw new IllegalArgumentException("bench.guard must be auto, native or plpgsql; was " + GUARD);
            }
            for (String suffix : java.util.Arrays.stream(Mode.values())
                    .map(m -> m.suffix)
                    .distinct()
                    .toList()) {
                s.execute("CREATE TABLE account_" + suffix + " (id int PRIMARY KEY, balance bigint NOT NULL,"
                        + " fencing_term bigint)");
                s.execute("INSERT INTO account_" + suffix + " (id, balance) SELECT g, 0 FROM generate_series(1, "
                        + ACCOUNTS + ") g");
                s.execute("CREATE TABLE entry_" + suffix + " (id bigserial PRIMARY KEY, account int NOT NULL,"
                        + " amount bigint NOT NULL, fencing_term bigint)");
            }
            s.execute("SELECT fencing.protect_table('account_writer', 'bench-writer')");
            s.execute("SELECT fencing.protect_table('entry_writer', 'bench-writer')");
            s.execute("SELECT fencing.protect_table('account_trigger', 'bench-trigger')");
            s.execute("SELECT fencing.protect_table('entry_trigger', 'bench-trigger')");
            // Both marks at the term (autocommit: each enter advances and commits), as after a leadership change.
            s.execute("SELECT fencing.enter('bench-writer', " + TERM + ", 'bench')");
            s.execute("SELECT fencing.enter('bench-trigger', " + TERM + ", 'bench')");
            s.execute("VACUUM ANALYZE");
        }
    }

    private static String guardImplementation(TestDatabase db) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement();
                var rs = s.executeQuery("SELECT fencing.guard_implementation()")) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static String settings(TestDatabase db) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement();
                var rs = s.executeQuery(
                        "SELECT version(), current_setting('fsync'), current_setting('synchronous_commit'),"
                                + " current_setting('full_page_writes'), current_setting('shared_buffers')")) {
            rs.next();
            return rs.getString(1) + "; fsync=" + rs.getString(2) + " synchronous_commit=" + rs.getString(3)
                    + " full_page_writes=" + rs.getString(4) + " shared_buffers=" + rs.getString(5);
        }
    }

    private static String cell(TestDatabase db, Kind kind, int connections, int seconds, int rounds) throws Exception {
        // REWRITTEN: the same JDBC batch as STATEMENTS; pgjdbc sends it as a few multi-row INSERTs (both modes alike).
        String url = kind == Kind.REWRITTEN ? db.jdbcUrl() + "?reWriteBatchedInserts=true" : db.jdbcUrl();
        DatabaseConfig config = DatabaseConfig.builder(url)
                .username(db.user())
                .password(db.password())
                .maximumPoolSize(connections)
                .applicationName("fence-bench")
                .build();
        Mode[] modes = Mode.values();
        long[] txns = new long[modes.length];
        long[] nanos = new long[modes.length];
        double[][] roundTps = new double[rounds][modes.length];
        long[] serverTicks = new long[modes.length];
        long[] clientNs = new long[modes.length];
        try (HikariDataSource pool = Databases.dataSource(config);
                Connection admin = db.dataSource().getConnection()) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            for (Mode m : modes) { // warm-up: JIT, plan caches, every pooled session used
                run(pool, writer, kind, m, connections, WARMUP_SECONDS);
            }
            List<Integer> backends = backends(admin);
            for (int r = 0; r < rounds; r++) {
                for (int i = 0; i < modes.length; i++) {
                    Mode m = modes[(i + r) % modes.length]; // rotate the order every round
                    long ticks0 = cpuTicks(backends);
                    long client0 = CLIENT_CPU_NS.sum();
                    long t0 = System.nanoTime();
                    long n = run(pool, writer, kind, m, connections, seconds);
                    long dt = System.nanoTime() - t0;
                    serverTicks[m.ordinal()] += cpuTicks(backends) - ticks0;
                    clientNs[m.ordinal()] += CLIENT_CPU_NS.sum() - client0;
                    txns[m.ordinal()] += n;
                    nanos[m.ordinal()] += dt;
                    roundTps[r][m.ordinal()] = n / (dt / 1e9);
                }
            }
        }
        double plain = tps(txns, nanos, Mode.UNFENCED);
        StringBuilder row =
                new StringBuilder(String.format(Locale.ROOT, "| %s | %d | %.0f |", kind.label, connections, plain));
        for (Mode m : FENCED) {
            double t = tps(txns, nanos, m);
            row.append(String.format(Locale.ROOT, " %.0f | %.2f (%.2f) |", t, t / plain, medianRatio(roundTps, m)));
        }
        StringBuilder cpu = new StringBuilder(String.format(Locale.ROOT, "| %s | %d |", kind.label, connections));
        for (Mode m : Mode.values()) {
            cpu.append(String.format(Locale.ROOT, " %.0f |", perTxnMicros(serverTicks, txns, m, TICK_NS)));
        }
        for (Mode m : Mode.values()) {
            cpu.append(String.format(Locale.ROOT, " %.0f |", perTxnMicros(clientNs, txns, m, 1)));
        }
        CPU.add(cpu.toString());
        return row.toString();
    }

    private static final Mode[] FENCED = {Mode.CONTROL, Mode.WRITER, Mode.TRIGGER_SET_LOCAL};

    private static final List<String> CPU = new ArrayList<>();
    /** Linux clock ticks (USER_HZ) are 10 ms. */
    private static final long TICK_NS = 10_000_000L;

    private static double perTxnMicros(long[] amount, long[] txns, Mode m, long unitNs) {
        return amount[m.ordinal()] * (double) unitNs / 1_000 / Math.max(1, txns[m.ordinal()]);
    }

    /** Backend pids of the benchmark pool (all connections exist after the warm-up: the pool is fixed-size). */
    private static List<Integer> backends(Connection admin) throws SQLException {
        List<Integer> pids = new ArrayList<>();
        try (Statement s = admin.createStatement();
                var rs = s.executeQuery("SELECT pid FROM pg_stat_activity WHERE application_name = 'fence-bench'")) {
            while (rs.next()) {
                pids.add(rs.getInt(1));
            }
        }
        return pids;
    }

    /** utime + stime of the backends from /proc (0 where unreadable, e.g. a server not on this machine). */
    private static long cpuTicks(List<Integer> pids) {
        long sum = 0;
        for (int pid : pids) {
            try {
                String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + pid + "/stat"));
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                sum += Long.parseLong(f[11]) + Long.parseLong(f[12]); // fields 14 and 15 of proc(5)
            } catch (java.io.IOException | RuntimeException e) {
                // backend gone or not local
            }
        }
        return sum;
    }

    /** Median over rounds of (fenced tps / unfenced tps) measured back to back: robust to bursts of outside load. */
    private static double medianRatio(double[][] roundTps, Mode m) {
        double[] ratios = new double[roundTps.length];
        for (int r = 0; r < roundTps.length; r++) {
            ratios[r] = roundTps[r][m.ordinal()] / roundTps[r][Mode.UNFENCED.ordinal()];
        }
        java.util.Arrays.sort(ratios);
        int n = ratios.length;
        return n % 2 == 1 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
    }

    private static double tps(long[] txns, long[] nanos, Mode m) {
        return txns[m.ordinal()] / (nanos[m.ordinal()] / 1e9);
    }

    private static String loadAverage() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg"))
                    .strip();
        } catch (java.io.IOException e) {
            return "n/a";
        }
    }

    private static final LongAdder CLIENT_CPU_NS = new LongAdder();
    private static final java.lang.management.ThreadMXBean THREADS =
            java.lang.management.ManagementFactory.getThreadMXBean();

    private static long run(HikariDataSource pool, FencedWriter writer, Kind kind, Mode mode, int threads, int seconds)
            throws InterruptedException {
        LongAdder done = new LongAdder();
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch finished = new CountDownLatch(threads);
        List<Throwable> errors = new ArrayList<>();
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        for (int i = 0; i < threads; i++) {
            Thread th = new Thread(
                    () -> {
                        long cpu0 = THREADS.getCurrentThreadCpuTime();
                        try {
                            while (!stop.get() && System.nanoTime() < deadline) {
                                transaction(pool, writer, kind, mode);
                                done.increment();
                            }
                            CLIENT_CPU_NS.add(THREADS.getCurrentThreadCpuTime() - cpu0);
                        } catch (Throwable e) {
                            synchronized (errors) {
                                errors.add(e);
                            }
                            stop.set(true);
                        } finally {
                            finished.countDown();
                        }
                    },
                    "bench-" + mode + "-" + i);
            th.start();
        }
        finished.await();
        if (!errors.isEmpty()) {
            throw new IllegalStateException(mode + " " + kind + " failed", errors.get(0));
        }
        return done.sum();
    }

    private static void transaction(HikariDataSource pool, FencedWriter writer, Kind kind, Mode mode) throws Exception {
        if (mode == Mode.WRITER) {
            writer.transaction(FencingToken.of("bench-writer", TERM, "bench"), ctx -> {
                ctx.dsl().connection(c -> business(c, kind, mode.suffix, null));
                return null;
            });
            return;
        }
        try (Connection c = pool.getConnection()) { // raw JDBC: unfenced, A/A control, trigger mode
            c.setAutoCommit(false);
            business(c, kind, mode.suffix, mode == Mode.TRIGGER_SET_LOCAL ? TERM : null);
            c.commit();
            c.setAutoCommit(true);
        }
    }

    /**
     * The business transaction. {@code term != null}: trigger mode, the term travels as {@code SET LOCAL fencing.term}
     * in the same round trip as the first statement (as documented for raw SQL).
     */
    private static void business(Connection c, Kind kind, String suffix, Long term) throws SQLException {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        String prefix = term == null ? "" : "SET LOCAL fencing.term = '" + term + "'; ";
        if (kind == Kind.SINGLE) {
            try (PreparedStatement ps = c.prepareStatement(
                    prefix + "UPDATE account_" + suffix + " SET balance = balance + 1 WHERE id = ?")) {
                ps.setInt(1, 1 + rnd.nextInt(ACCOUNTS));
                ps.execute();
            }
        } else if (kind == Kind.BATCH) {
            try (PreparedStatement ps = c.prepareStatement(
                    prefix + "INSERT INTO entry_" + suffix + " (account, amount) VALUES " + MULTI_ROW_VALUES)) {
                for (int i = 0; i < BATCH; i++) {
                    ps.setInt(2 * i + 1, 1 + rnd.nextInt(ACCOUNTS));
                    ps.setLong(2 * i + 2, 1 + rnd.nextInt(1000));
                }
                ps.execute();
            }
        } else {
            if (term != null) {
                try (Statement s = c.createStatement()) {
                    s.execute("SET LOCAL fencing.term = '" + term + "'");
                }
            }
            try (PreparedStatement ps =
                    c.prepareStatement("INSERT INTO entry_" + suffix + " (account, amount) VALUES (?, ?)")) {
                for (int i = 0; i < BATCH; i++) {
                    ps.setInt(1, 1 + rnd.nextInt(ACCOUNTS));
                    ps.setLong(2, 1 + rnd.nextInt(1000));
                    ps.addBatch();
                }
                ps.executeBatch();
            }
        }
    }
}
