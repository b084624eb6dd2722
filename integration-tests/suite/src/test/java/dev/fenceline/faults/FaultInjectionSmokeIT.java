package dev.fenceline.faults;

import dev.fenceline.faults.nemesis.Faults;
import dev.fenceline.faults.workload.RunConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The smoke mode of the fault-injection suite (runs in {@code mvn verify}): 3 real workers of the sample against a
 * real PostgreSQL and a real 3-member etcd; every fault kind injected twice in a seeded order; then the history
 * check. Set {@code -Dfenceline.faults.seed=N} to replay a schedule. Timing is reported, never asserted (except the
 * generous liveness bound of check (e), derived from the TTL).
 */
class FaultInjectionSmokeIT {

    @Test
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void everyFaultKindTwiceAndNoStaleWriteEverCommits() {
        long seed = Long.getLong("fenceline.faults.seed", System.currentTimeMillis() % 1_000_000);
        Path jar = Path.of(System.getProperty("fenceline.jar", "../../settlement-sample/target/fenceline.jar")).toAbsolutePath();
        Path out = Path.of(System.getProperty("fenceline.faults.out", "target/fault-suite")).toAbsolutePath();
        RunReport report = FaultSuiteRunner.run(RunConfig.smoke(seed, jar, out, Faults.kinds()));

        assertThat(report.result.violations()).as(report.result.explain()).isEmpty();
        report.injectionsPerKind().forEach((kind, n) -> {
            if (!report.skippedKinds.contains(kind)) {
                assertThat(n).as("injections of %s (seed %d)", kind, seed).isGreaterThanOrEqualTo(2);
            }
        });
    }
}
