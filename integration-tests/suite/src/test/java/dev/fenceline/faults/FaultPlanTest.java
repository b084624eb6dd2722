package dev.fenceline.faults;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.faults.nemesis.Faults;
import dev.fenceline.faults.workload.PostgresSetup;
import dev.fenceline.faults.workload.RunConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class FaultPlanTest {
    private static final Path JAR = Path.of("fenceline.jar");
    private static final Path OUT = Path.of("target/x");

    @Test
    void smokePlanHasEveryKindTwiceAndIsReproducibleFromTheSeed() {
        List<String> a = FaultSuiteRunner.plan(RunConfig.smoke(7, JAR, OUT, Faults.kinds()), 0);
        List<String> b = FaultSuiteRunner.plan(RunConfig.smoke(7, JAR, OUT, Faults.kinds()), 0);
        List<String> c = FaultSuiteRunner.plan(RunConfig.smoke(8, JAR, OUT, Faults.kinds()), 0);
        assertThat(a).isEqualTo(b).isNotEqualTo(c).hasSize(2 * Faults.kinds().size());
        for (String k : Faults.kinds()) {
            assertThat(a).filteredOn(k::equals).hasSize(2);
        }
    }

    @Test
    void soakPlanIsReproducibleFromTheSeed() {
        RunConfig s = RunConfig.soak(99, Duration.ofMinutes(5), JAR, OUT, Faults.kinds());
        assertThat(FaultSuiteRunner.plan(s, 50))
                .isEqualTo(FaultSuiteRunner.plan(s, 50))
                .hasSize(50);
    }

    @Test
    void everyFaultKindIsThere() {
        assertThat(Faults.kinds())
                .containsExactlyInAnyOrder(
                        "freezeLeader",
                        "killLeader",
                        "workerEtcdPartition",
                        "quorumLoss",
                        "quorumBlip",
                        "minorityPartition",
                        "clockJump",
                        "dbConnectionLoss",
                        "coordinatorRebuilt",
                        "pgbouncerRestart",
                        "pgbouncerPause",
                        "poolerServerConnKill",
                        "postgresFailover",
                        "hungEtcdMember",
                        "slowEtcdDisk",
                        "rogueWriter",
                        "auditFlood");
        assertThat(Faults.kinds()).containsAll(Faults.POSTGRES_PATH_KINDS).containsAll(Faults.ETCD_AND_ROGUE_KINDS);
    }

    @Test
    void percentilesUseNearestRank() {
        assertThat(RunReport.pct(List.of(5L, 1L, 3L, 2L, 4L), 50)).isEqualTo(3);
        assertThat(RunReport.pct(List.of(5L, 1L, 3L, 2L, 4L), 99)).isEqualTo(5);
        assertThat(RunReport.pct(List.of(), 50)).isEqualTo(-1);
    }

    @Test
    void standbyModesParseAndBadOnesSayWhatIsAllowed() {
        assertThat(PostgresSetup.Standby.parse("sync")).isEqualTo(PostgresSetup.Standby.SYNCHRONOUS);
        assertThat(PostgresSetup.Standby.parse("ASYNC")).isEqualTo(PostgresSetup.Standby.ASYNCHRONOUS);
        assertThat(PostgresSetup.Standby.parse("none")).isEqualTo(PostgresSetup.Standby.NONE);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> PostgresSetup.Standby.parse("semi"))
                .hasMessageContaining("--standby")
                .hasMessageContaining("none, sync or async")
                .hasMessageContaining("semi");
        assertThat(RunConfig.smoke(1, JAR, OUT, Faults.kinds()).postgres()).isEqualTo(PostgresSetup.DIRECT);
    }

    @Test
    void soakDurationsParse() {
        assertThat(Soak.parseDuration("90s")).isEqualTo(Duration.ofSeconds(90));
        assertThat(Soak.parseDuration("30m")).isEqualTo(Duration.ofMinutes(30));
        assertThat(Soak.parseDuration("PT1H")).isEqualTo(Duration.ofHours(1));
    }
}
