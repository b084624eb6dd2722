package dev.fenceline.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.election.Leadership;
import dev.fenceline.migrations.FencingMigrations;
import dev.fenceline.spring.plain.LedgerService;
import dev.fenceline.spring.plain.PlainApplication;
import dev.fenceline.spring.sample.FreezePoint;
import dev.fenceline.spring.sample.LeadershipEvents;
import dev.fenceline.spring.sample.SampleApplication;
import dev.fenceline.spring.scheduled.RunStarts;
import dev.fenceline.spring.scheduled.ScheduledApplication;
import dev.fenceline.spring.work.WorkApplication;
import dev.fenceline.task.LeaderTask;
import dev.fenceline.task.RunOutcome;
import dev.fenceline.task.TaskPhase;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import dev.fenceline.testkit.junit.PostgresExtension;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The sample Spring Boot applications against the testkit's real PostgreSQL and real 3-member etcd (no mocks): two
 * instances of {@link SampleApplication} elect a leader whose fenced task writes rows; a leader frozen right before
 * its transaction and deposed meanwhile is rejected by PostgreSQL when it resumes, and audited once; the health
 * component shows leader, term and validity. {@link PlainApplication} writes with the auto-configured election and
 * writer itself.
 */
@ExtendWith({PostgresExtension.class, EtcdClusterExtension.class})
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SampleApplicationIT {
    private static final Duration WAIT = Duration.ofSeconds(60);

    private TestDatabase db;
    private EtcdCluster etcd;
    private JdbcTemplate sql;

    @BeforeAll
    void setUp(TestDatabase db, EtcdCluster etcd) {
        this.db = db;
        this.etcd = etcd;
        this.sql = new JdbcTemplate(db.dataSource());
    }

    private ConfigurableApplicationContext startSample(String candidate) {
        return TestApplications.start(
                SampleApplication.class,
                db,
                etcd,
                candidate,
                "fenceline.election.name=sample",
                "spring.flyway.locations=classpath:db/sample",
                "spring.flyway.table=sample_schema_history");
    }

    private static Health fencelineHealth(ConfigurableApplicationContext app) {
        return (Health) app.getBean(HealthEndpoint.class).healthForPath("fenceline");
    }

    private static LeaderTask task(ConfigurableApplicationContext app) {
        return app.getBean(FencedLeaderTasks.class).task("sample").orElseThrow();
    }

    private long count(String query, Object... args) {
        Long n = sql.queryForObject(query, Long.class, args);
        return n == null ? 0 : n;
    }

    @Test
    void theLeaderWritesFencedRowsAndAFrozenDeposedLeadersWriteIsRejectedByPostgresAndAuditedOnce() throws Exception {
        try (ConfigurableApplicationContext a = startSample("app-a")) {
            // The application's own migration called fencing.protect_table: the fencing schema came first.
            assertThat(count("SELECT count(*) FROM sample_schema_history WHERE version = '1' AND success"))
                    .isEqualTo(1);
            assertThat(count("SELECT count(*) FROM " + FencingMigrations.SCHEMA + "." + FencingMigrations.HISTORY_TABLE
                            + " WHERE success"))
                    .isPositive();

            await().atMost(WAIT)
                    .until(() ->
                            Boolean.TRUE.equals(fencelineHealth(a).getDetails().get("leader")));
            long termA = ((Number) fencelineHealth(a).getDetails().get("term")).longValue();
            sql.update("INSERT INTO request (id, amount) VALUES (1, 100)");
            await().atMost(WAIT).until(() -> count("SELECT count(*) FROM settlement WHERE request_id = 1") == 1);
            assertThat(sql.queryForMap("SELECT settled_by, fencing_term FROM settlement WHERE request_id = 1"))
                    .containsEntry("settled_by", "app-a")
                    .containsEntry("fencing_term", termA);
            Health leaderHealth = fencelineHealth(a);
            assertThat(leaderHealth.getStatus()).isEqualTo(Status.UP);
            assertThat(leaderHealth.getDetails())
                    .containsEntry("leader", true)
                    .containsEntry("term", termA)
                    .containsEntry("valid", true)
                    .containsEntry("candidate", "app-a");

            ConfigurableApplicationContext b = startSample("app-b");
            try (ElectionAdmin admin = ElectionAdmin.connect(ElectionConfig.builder()
                    .endpointsCsv(etcd.endpointsCsv())
                    .meterRegistry(new SimpleMeterRegistry())
                    .build())) {
                await().atMost(WAIT)
                        .until(() -> "CAMPAIGNING"
                                .equals(fencelineHealth(b).getDetails().get("phase")));
                assertThat(fencelineHealth(b).getStatus()).isEqualTo(Status.UP);
                // A follower sees who leads: the leader record it last read.
                await().atMost(WAIT)
                        .until(() -> java.util.Map.of("id", "app-a", "term", termA)
                                .equals(fencelineHealth(b).getDetails().get("observedLeader")));
                assertThat(fencelineHealth(b).getDetails())
                        .containsEntry("leader", false)
                        .containsEntry("valid", false);

                // Freeze A after its last validity check, before its transaction: it carries termA.
                FreezePoint freeze = a.getBean(FreezePoint.class);
                freeze.arm();
                assertThat(freeze.awaitFrozen(WAIT.toSeconds(), TimeUnit.SECONDS))
                        .isEqualTo(termA);
                sql.update("INSERT INTO request (id, amount) VALUES (2, 200)");

                // Depose A while it is frozen; B takes over and settles request 2 at a newer term.
                assertThat(admin.requestResign("sample")).contains(termA);
                await().atMost(WAIT)
                        .until(() -> Boolean.TRUE.equals(
                                fencelineHealth(b).getDetails().get("leader")));
                long termB = ((Number) fencelineHealth(b).getDetails().get("term")).longValue();
                assertThat(termB).isGreaterThan(termA);
                await().atMost(WAIT).until(() -> count("SELECT count(*) FROM settlement WHERE request_id = 2") == 1);
                assertThat(sql.queryForMap("SELECT settled_by, fencing_term FROM settlement WHERE request_id = 2"))
                        .containsEntry("settled_by", "app-b")
                        .containsEntry("fencing_term", termB);

                // A resumes with its old term: PostgreSQL rejects the whole transaction and the rejection is audited.
                freeze.release();
                await().atMost(WAIT).until(() -> task(a).health().runsRejected() >= 1);
                assertThat(task(a).health().runsRejected()).isEqualTo(1);
                assertThat(task(a).health().lastRun().outcome()).isEqualTo(RunOutcome.REJECTED_STALE);
                assertThat(task(a).health().lastRun().term()).isEqualTo(termA);
                assertThat(count("SELECT count(*) FROM fencing.rejected_write WHERE leader_id = 'app-a'"))
                        .isEqualTo(1);
                assertThat(count(
                                "SELECT count(*) FROM fencing.rejected_write WHERE resource = 'sample'"
                                        + " AND leader_id = 'app-a' AND offered_term = ? AND highest_accepted = ?",
                                termA,
                                termB))
                        .isEqualTo(1);
                assertThat(count("SELECT count(*) FROM settlement WHERE request_id = 2"))
                        .isEqualTo(1);
                assertThat(count("SELECT count(*) FROM settlement WHERE settled_by = 'app-a' AND request_id <> 1"))
                        .isZero();

                // Leadership as application events: A was granted termA and, deposed, had it revoked; B got termB.
                await().atMost(WAIT)
                        .until(() -> a.getBean(LeadershipEvents.class).seen().size() >= 2);
                assertThat(a.getBean(LeadershipEvents.class).seen())
                        .startsWith("granted " + termA + " sample app-a", "revoked " + termA + " sample app-a");
                assertThat(b.getBean(LeadershipEvents.class).seen())
                        .containsExactly("granted " + termB + " sample app-b");

                Health deposed = fencelineHealth(a);
                assertThat(deposed.getStatus()).isEqualTo(Status.UP);
                assertThat(deposed.getDetails()).containsEntry("leader", false).containsEntry("valid", false);
                assertThat(fencelineHealth(b).getDetails())
                        .containsEntry("leader", true)
                        .containsEntry("term", termB)
                        .containsEntry("valid", true);

                // The task's and the election's own meters are in the application's registry.
                MeterRegistry meters = a.getBean(MeterRegistry.class);
                assertThat(meters.get("fenceline.task.runs")
                                .tag("resource", "sample")
                                .tag("outcome", RunOutcome.REJECTED_STALE.name())
                                .counter()
                                .count())
                        .isEqualTo(1.0);
                assertThat(meters.get("fenceline.election.leader")
                                .tag("election", "sample")
                                .gauge()
                                .value())
                        .isZero();
                assertThat(b.getBean(MeterRegistry.class)
                                .get("fenceline.election.leader")
                                .tag("election", "sample")
                                .gauge()
                                .value())
                        .isEqualTo(1.0);

                // Closing B's context hands over: its task stops, its term is resigned (the record deleted, not left
                // to expire with the lease), and A, still running, takes over at a newer term.
                LeaderTask taskB = task(b);
                b.close();
                assertThat(taskB.health().phase()).isEqualTo(TaskPhase.STOPPED);
                assertThat(admin.leader("sample")).map(LeaderRecord::leaderId).isNotEqualTo(Optional.of("app-b"));
                await().atMost(WAIT)
                        .until(() -> Boolean.TRUE.equals(
                                fencelineHealth(a).getDetails().get("leader")));
                assertThat(((Number) fencelineHealth(a).getDetails().get("term")).longValue())
                        .isGreaterThan(termB);
            } finally {
                b.close();
            }
        }
    }

    @Test
    void anApplicationWithoutTasksWritesWithTheAutoConfiguredElectionAndWriter() throws Exception {
        try (TestDatabase plainDb = db.server().createDatabase("PlainApplication");
                ConfigurableApplicationContext app = TestApplications.start(
                        PlainApplication.class,
                        plainDb,
                        etcd,
                        "plain-1",
                        "fenceline.election.name=ledger",
                        "spring.flyway.locations=classpath:db/plain",
                        "spring.flyway.table=plain_schema_history")) {
            assertThat(app.getBeansOfType(LeaderTask.class)).isEmpty();
            LeaderElection election = app.getBean(LeaderElection.class);
            Leadership leadership = election.awaitLeadership(WAIT);
            assertThat(app.getBean(LedgerService.class).record(1)).isTrue();
            assertThat(new JdbcTemplate(plainDb.dataSource())
                            .queryForObject("SELECT fencing_term FROM ledger_entry WHERE id = 1", Long.class))
                    .isEqualTo(leadership.term());

            Health health = fencelineHealth(app);
            assertThat(health.getStatus()).isEqualTo(Status.UP);
            assertThat(health.getDetails())
                    .containsEntry("election", "ledger")
                    .containsEntry("leader", true)
                    .containsEntry("term", leadership.term())
                    .containsEntry("valid", true);
        }
    }

    @Test
    void aTaskWorkBeanRunsAsAFencedTaskOnTheResourceItsClassNames() {
        try (TestDatabase workDb = db.server().createDatabase("WorkApplication");
                ConfigurableApplicationContext app = TestApplications.start(
                        WorkApplication.class,
                        workDb,
                        etcd,
                        "worker-1",
                        "spring.flyway.locations=classpath:db/work",
                        "spring.flyway.table=work_schema_history")) {
            assertThat(app.getBeansOfType(LeaderElection.class))
                    .as("the task holds its own election")
                    .isEmpty();
            LeaderTask task = app.getBean(FencedLeaderTasks.class).task("work").orElseThrow();
            assertThat(task.election().electionName()).isEqualTo("work");

            JdbcTemplate workSql = new JdbcTemplate(workDb.dataSource());
            workSql.update("INSERT INTO job (id) VALUES (7)");
            await().atMost(WAIT).until(() -> task.health().runsCommitted() >= 1);
            long term = task.health().term();
            assertThat(workSql.queryForObject("SELECT fencing_term FROM job_done WHERE job_id = 7", Long.class))
                    .isEqualTo(term);
            assertThat(fencelineHealth(app).getDetails())
                    .containsEntry("resource", "work")
                    .containsEntry("leader", true)
                    .containsEntry("term", term)
                    .containsEntry("valid", true);
        }
    }

    @Test
    void aTaskRunsOnTheFixedRateItsAnnotationReadsFromTheEnvironment() {
        try (TestDatabase ticksDb = db.server().createDatabase("ScheduledApplication");
                ConfigurableApplicationContext app = TestApplications.start(
                        ScheduledApplication.class,
                        ticksDb,
                        etcd,
                        "ticker-1",
                        "ticks.rate=300ms",
                        "spring.flyway.locations=classpath:db/ticks",
                        "spring.flyway.table=ticks_schema_history")) {
            LeaderTask task = app.getBean(FencedLeaderTasks.class).task("ticks").orElseThrow();
            assertThat(task.config().schedule()).hasToString("fixedRate(PT0.3S)");
            List<Long> starts = app.getBean(RunStarts.class).startsMs();
            await().atMost(WAIT).until(() -> starts.size() >= 5);
            app.close();

            List<Long> gaps = new ArrayList<>();
            for (int i = 1; i < starts.size(); i++) {
                gaps.add(starts.get(i) - starts.get(i - 1));
            }
            // every run did one unit of work: the default schedule (interval 0) would have started the next at once
            assertThat(gaps).allSatisfy(gap -> assertThat(gap).isGreaterThanOrEqualTo(290L));
            assertThat(task.health().runsCommitted()).isEqualTo(starts.size());
            assertThat(new JdbcTemplate(ticksDb.dataSource())
                            .queryForObject("SELECT count(*) FROM tick WHERE fencing_term IS NOT NULL", Long.class))
                    .isEqualTo(starts.size());
        }
    }
}
