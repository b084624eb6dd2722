package dev.fenceline.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fenceline.migrations.FencingMigrations;
import dev.fenceline.spring.work.WorkApplication;
import dev.fenceline.task.LeaderTask;
import dev.fenceline.task.RunOutcome;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import dev.fenceline.testkit.junit.PostgresExtension;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.actuate.endpoint.IndicatedHealthDescriptor;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The starter on Spring Boot 4, against the testkit's real PostgreSQL and real 3-member etcd: a fenced task commits
 * under its term, after the fencing migrations ran before the application's own Flyway (Boot 4's spring-boot-flyway);
 * its meters are in Boot's registry; the {@code fenceline} health component is registered with Boot 4's health API
 * and shows the leader and its term; an unknown {@code fenceline.*} property fails start-up. The Boot 3 artifact's {@code SampleApplicationIT} covers
 * the rest of the behaviour, which is the same code.
 */
@ExtendWith({PostgresExtension.class, EtcdClusterExtension.class})
class SpringBoot4ApplicationIT {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void aFencedTaskCommitsUnderItsTermAndTheHealthComponentShowsTheLeader(PostgresServer server, EtcdCluster etcd) {
        assertThat(SpringBootVersion.getVersion()).startsWith("4.0.");
        try (TestDatabase db = server.createDatabase("Boot4WorkApplication");
                ConfigurableApplicationContext app = TestApplications.start(
                        WorkApplication.class,
                        db,
                        etcd,
                        "boot4-worker",
                        "spring.flyway.locations=classpath:db/work",
                        "spring.flyway.table=work_schema_history")) {
            JdbcTemplate sql = new JdbcTemplate(db.dataSource());
            // The application's migration called fencing.protect_table: the fencing schema came first.
            assertThat(sql.queryForObject(
                            "SELECT count(*) FROM " + FencingMigrations.SCHEMA + "." + FencingMigrations.HISTORY_TABLE
                                    + " WHERE success",
                            Long.class))
                    .isPositive();
            assertThat(sql.queryForObject(
                            "SELECT count(*) FROM work_schema_history WHERE version = '1' AND success", Long.class))
                    .isEqualTo(1);

            LeaderTask task = app.getBean(FencedLeaderTasks.class).task("work").orElseThrow();
            sql.update("INSERT INTO job (id) VALUES (7)");
            await().atMost(WAIT).until(() -> task.health().runsCommitted() >= 1);
            long term = task.health().term();
            assertThat(sql.queryForObject("SELECT fencing_term FROM job_done WHERE job_id = 7", Long.class))
                    .isEqualTo(term);

            // Ordered after Boot 4's metrics auto-configurations, the task's meters land in Boot's registry.
            assertThat(app.getBean(MeterRegistry.class)
                            .get("fenceline.task.runs")
                            .tag("resource", "work")
                            .tag("outcome", RunOutcome.COMMITTED.name())
                            .counter()
                            .count())
                    .isGreaterThanOrEqualTo(1.0);

            IndicatedHealthDescriptor health = (IndicatedHealthDescriptor)
                    app.getBean(HealthEndpoint.class).healthForPath("fenceline");
            assertThat(health).as("the fenceline health component").isNotNull();
            assertThat(health.getStatus()).isEqualTo(Status.UP);
            assertThat(health.getDetails())
                    .containsEntry("resource", "work")
                    .containsEntry("candidate", "boot4-worker")
                    .containsEntry("leader", true)
                    .containsEntry("term", term)
                    .containsEntry("valid", true);
        }
    }

    @Test
    void anUnknownFencelinePropertyFailsStartUpNamingIt(TestDatabase db, EtcdCluster etcd) {
        assertThatThrownBy(() -> TestApplications.start(
                                WorkApplication.class,
                                db,
                                etcd,
                                "boot4-misspelled",
                                "fenceline.election.ttll=3s",
                                "spring.flyway.locations=classpath:db/work",
                                "spring.flyway.table=work_schema_history")
                        .close())
                .hasRootCauseInstanceOf(UnknownFencelinePropertyException.class)
                .rootCause()
                .hasMessageStartingWith("fenceline.election.ttll is not a Fenceline property")
                .hasMessageEndingWith("did you mean fenceline.election.ttl?");
    }
}
