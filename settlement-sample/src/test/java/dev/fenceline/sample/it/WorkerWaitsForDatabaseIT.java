package dev.fenceline.sample.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.sample.demo.ChildProcess;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A worker restarted while PostgreSQL (or the pooler in front of it) refuses connections — right after a failover or a
 * pooler restart — must wait for it, as it waits for etcd, not exit: a fleet whose restarted workers die one by one
 * ends with a single worker and no successor for it.
 */
@ExtendWith({PostgresExtension.class, EtcdClusterExtension.class})
class WorkerWaitsForDatabaseIT {
    @Test
    void aWorkerStartedWhileItsDatabaseRefusesConnectionsWaitsAndSettlesOnceItAcceptsThem(
            TestDatabase db, EtcdCluster etcd) throws Exception {
        try (SampleProcesses s = new SampleProcesses(db, etcd, "db-later")) {
            assertThat(s.cli("migrate").exit()).isZero();
            assertThat(s.cli("seed", "--payments", "300").exit()).isZero();
            // From another database (PostgreSQL refuses it for the current one): every new connection to the test
            // database is refused, superusers included, until it is allowed again.
            try (Connection other =
                            DriverManager.getConnection(db.server().jdbcUrl("postgres") + "?user=" + db.user());
                    Statement st = other.createStatement()) {
                st.execute("ALTER DATABASE \"" + db.name() + "\" ALLOW_CONNECTIONS false");
                try {
                    ChildProcess w =
                            s.startWorker("w1", "--ttl-ms", "3000", "--batch-size", "50", "--interval-ms", "50");
                    await("the worker reports it is retrying")
                            .atMost(Duration.ofSeconds(60))
                            .pollInterval(Duration.ofMillis(100))
                            .until(() -> w.stderrText().contains("retrying") || !w.isAlive());
                    assertThat(w.isAlive())
                            .as("the worker exited instead of waiting:\n" + w.stderrText())
                            .isTrue();
                } finally {
                    st.execute("ALTER DATABASE \"" + db.name() + "\" ALLOW_CONNECTIONS true");
                }
            }
            s.awaitAllSettledByThenVerify("w1");
        }
    }

    /**
     * Waiting fixes an unreachable server, not a login it refuses: a worker whose role does not exist (SQLSTATE 28000;
     * a wrong password is 28P01) must exit at once naming the SQLSTATE, not retry for ever.
     */
    @Test
    void aWorkerWhoseLoginTheDatabaseRefusesExitsAtOnceNamingTheSqlState(TestDatabase db, EtcdCluster etcd)
            throws Exception {
        try (SampleProcesses s = new SampleProcesses(db, etcd, "db-refuses", db.jdbcUrl() + "?user=no_such_role")) {
            ChildProcess w = s.startWorker("w1", "--ttl-ms", "3000");
            await("the worker exits or retries")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> !w.isAlive() || w.stderrText().contains("retrying"));
            assertThat(w.stderrText()).doesNotContain("retrying");
            assertThat(w.waitFor(Duration.ofSeconds(30))).as(w.stderrText()).isEqualTo(1);
            assertThat(w.stderrText()).contains("SQLSTATE 28000").contains("no_such_role");
        }
    }
}
