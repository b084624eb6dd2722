package dev.fenceline.faults;

import dev.fenceline.faults.nemesis.Faults;
import dev.fenceline.faults.workload.PostgresSetup;
import dev.fenceline.faults.workload.RunConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * The soak mode: {@code --duration 30m --seed 42 [--ttl-ms 3000] [--kinds a,b] [--jar PATH] [--out DIR] [--pooler]
 * [--standby none|sync|async]} ({@code --pooler}: the workers go through PgBouncer; {@code --standby}: a streaming
 * standby for {@code postgresFailover}; with {@code async}, acknowledged commits a failover loses are reported apart
 * from violations and do not fail the run).
 * Exit 0 when the history check passes, 1 on violations, 2 on bad arguments. See docs/fault-injection.md.
 */
public final class Soak {
    private Soak() {}

    public static void main(String[] args) {
        Duration duration = Duration.ofMinutes(30);
        long seed = System.nanoTime() & 0xFFFFFFFFL;
        long ttlMs = 3000;
        List<String> kinds = Faults.kinds();
        Path jar = Path.of("settlement-sample/target/fenceline.jar");
        Path out = Path.of("integration-tests/suite/target/fault-suite/soak");
        boolean pooler = false;
        PostgresSetup.Standby standby = PostgresSetup.Standby.NONE;
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                String v = i + 1 < args.length ? args[i + 1] : null;
                switch (a) {
                    case "--duration" -> {
                        duration = parseDuration(v);
                        i++;
                    }
                    case "--seed" -> {
                        seed = Long.parseLong(v);
                        i++;
                    }
                    case "--ttl-ms" -> {
                        ttlMs = Long.parseLong(v);
                        i++;
                    }
                    case "--kinds" -> {
                        kinds = Arrays.asList(v.split(","));
                        kinds.forEach(Faults::get);
                        i++;
                    }
                    case "--jar" -> {
                        jar = Path.of(v);
                        i++;
                    }
                    case "--out" -> {
                        out = Path.of(v);
                        i++;
                    }
                    case "--pooler" -> pooler = true;
                    case "--standby" -> {
                        standby = PostgresSetup.Standby.parse(v);
                        i++;
                    }
                    case "--help", "-h" -> {
                        System.out.println("usage: Soak --duration 30m --seed N [--ttl-ms 3000] [--kinds "
                                + String.join(",", Faults.kinds()) + "] [--jar PATH] [--out DIR] [--pooler] "
                                + "[--standby none|sync|async]");
                        return;
                    }
                    default -> throw new IllegalArgumentException("unknown argument " + a);
                }
            }
            if (duration.isNegative() || duration.isZero()) {
                throw new IllegalArgumentException("--duration must be positive");
            }
        } catch (RuntimeException e) {
            System.err.println("bad arguments: " + e.getMessage());
            System.exit(2);
            return;
        }
        RunConfig base = RunConfig.soak(seed, duration, jar.toAbsolutePath(), out.toAbsolutePath(), kinds);
        RunConfig cfg = new RunConfig(
                base.seed(),
                base.kinds(),
                0,
                base.duration(),
                base.hardCap(),
                base.jar(),
                base.outputDir(),
                base.workers(),
                Duration.ofMillis(ttlMs),
                base.batchSize(),
                base.intervalMs(),
                base.paymentsPerTick(),
                base.paymentTickMs(),
                base.maxPayments(),
                base.clockJumps(),
                base.election(),
                new PostgresSetup(pooler, standby));
        RunReport report = FaultSuiteRunner.run(cfg);
        System.exit(report.ok() ? 0 : 1);
    }

    /** "90s", "30m", "2h" or an ISO-8601 duration. */
    static Duration parseDuration(String v) {
        if (v == null) {
            throw new IllegalArgumentException("--duration needs a value like 30m");
        }
        String s = v.trim().toLowerCase(java.util.Locale.ROOT);
        if (s.startsWith("p")) {
            return Duration.parse(v.toUpperCase(java.util.Locale.ROOT));
        }
        long n = Long.parseLong(s.substring(0, s.length() - 1));
        return switch (s.charAt(s.length() - 1)) {
            case 's' -> Duration.ofSeconds(n);
            case 'm' -> Duration.ofMinutes(n);
            case 'h' -> Duration.ofHours(n);
            default -> throw new IllegalArgumentException("duration '" + v + "': use 90s, 30m, 2h or ISO-8601");
        };
    }
}
