package dev.fenceline.task.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencedWriterConfig;
import dev.fenceline.task.LeaderTask;
import dev.fenceline.task.LeaderTaskConfig;
import dev.fenceline.task.RunContext;
import dev.fenceline.task.RunOutcome;
import dev.fenceline.task.RunResult;
import dev.fenceline.task.TaskListener;
import dev.fenceline.task.TaskPhase;
import dev.fenceline.task.TaskWork;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * One sample of {@link FirstCommitBenchmark}, in a fresh JVM: start a leader task, campaign alone, and report the
 * time from winning (the election's LEADER event) to the task reporting its first committed run, with the steps in
 * between. Args: jdbcUrl user password etcdEndpointsCsv resource warm|cold.
 */
public final class FirstCommitChild {
    private FirstCommitChild() {}

    public static void main(String[] args) throws Exception {
        long t0 = System.nanoTime();
        String jdbcUrl = args[0];
        String resource = args[4];
        boolean warm = "warm".equals(args[5]);
        // won, leading (task thread woke), run starting (mark read, plan made), committed, work began, work ended
        long[] at = new long[6];
        int[] classes = new int[2];
        long[] cpu = new long[2]; // the task thread's CPU time when it woke as leader and when the commit returned
        var threads = java.lang.management.ManagementFactory.getThreadMXBean();
        var classLoading = java.lang.management.ManagementFactory.getClassLoadingMXBean();
        CountDownLatch done = new CountDownLatch(1);
        try (HikariDataSource pool = Databases.dataSource(DatabaseConfig.builder(jdbcUrl)
                        .username(args[1])
                        .password(args[2].isEmpty() ? null : args[2])
                        .maximumPoolSize(2)
                        .build());
                ElectionSession session = ElectionSession.open(ElectionConfig.builder()
                        .endpoints(List.of(args[3].split(",")))
                        .ttl(Duration.ofSeconds(3))
                        .closeOnShutdown(false)
                        .meterRegistry(new SimpleMeterRegistry())
                        .build())) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            LeaderTask task = LeaderTask.builder(session, writer, resource, TaskWork.of(ctx -> {
                        if (at[4] == 0) {
                            at[4] = System.nanoTime();
                        }
                        int n = ctx.insertInto(DSL.table(DSL.name("public", "entry")))
                                .set(DSL.field(DSL.name("term"), SQLDataType.BIGINT), ctx.term())
                                .execute();
                        if (at[5] == 0) {
                            at[5] = System.nanoTime();
                        }
                        return n;
                    }))
                    .config(LeaderTaskConfig.builder()
                            .candidateId("bench-" + ProcessHandle.current().pid())
                            .warmUp(warm)
                            .meterRegistry(new SimpleMeterRegistry())
                            .build())
                    .listener(new TaskListener() {
                        @Override
                        public void onPhaseChange(TaskPhase previous, TaskPhase phase, long term, String reason) {
                            if (phase == TaskPhase.LEADING && at[1] == 0) {
                                at[1] = System.nanoTime();
                                cpu[0] = threads.getCurrentThreadCpuTime();
                            }
                        }

                        @Override
                        public void onRunStarting(RunContext run, Object plan) {
                            if (at[2] == 0) {
                                at[2] = System.nanoTime();
                            }
                        }

                        @Override
                        public void onRunFinished(RunResult result) {
                            if (result.outcome() == RunOutcome.COMMITTED && at[3] == 0) {
                                at[3] = System.nanoTime();
                                classes[1] = classLoading.getLoadedClassCount();
                                cpu[1] = threads.getCurrentThreadCpuTime();
                                done.countDown();
                            }
                        }
                    })
                    .build();
            task.election().addListener(ev -> {
                if (ev.state() == LeadershipState.LEADER && at[0] == 0) {
                    at[0] = ev.nanoTime();
                    classes[0] = classLoading.getLoadedClassCount();
                }
            });
            task.start();
            if (!done.await(60, TimeUnit.SECONDS)) {
                System.out.println("SAMPLE_FAILED no commit within 60 s: " + task.health());
                System.exit(2);
            }
            System.out.printf(
                    "SAMPLE mode=%s first_commit_ns=%d wake_ns=%d check_plan_ns=%d transaction_ns=%d"
                            + " start_to_won_ns=%d enter_ns=%d work_ns=%d commit_ns=%d classes_loaded=%d task_cpu_ns=%d%n",
                    args[5],
                    at[3] - at[0],
                    at[1] - at[0],
                    at[2] - at[1],
                    at[3] - at[2],
                    at[0] - t0,
                    at[4] - at[2],
                    at[5] - at[4],
                    at[3] - at[5],
                    classes[1] - classes[0],
                    cpu[1] - cpu[0]);
            var runtime = java.lang.management.ManagementFactory.getRuntimeMXBean();
            System.out.printf(
                    "TRACE pid=%d uptime_now_ms=%d won_ms_ago=%d%n",
                    ProcessHandle.current().pid(),
                    runtime.getUptime(),
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - at[0]));
            System.out.flush();
            task.close();
        }
        System.exit(0);
    }
}
