package example;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.table;

import dev.fenceline.election.ElectionSession;
import dev.fenceline.fencing.FencedContext;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.WriteDescription;
import dev.fenceline.task.LeaderTask;
import dev.fenceline.task.LeaderTaskConfig;
import dev.fenceline.task.RunContext;
import dev.fenceline.task.RunOutcome;
import dev.fenceline.task.RunResult;
import dev.fenceline.task.TaskListener;
import dev.fenceline.task.TaskSchedule;
import dev.fenceline.task.TaskWork;
import java.time.Duration;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.List;
import javax.sql.DataSource;

/** The examples of docs/leader-task.md (compiled; not run). */
final class LeaderTaskSnippets {
    private LeaderTaskSnippets() {
    }

    // tag::plan-and-run[]
    /** Plan outside the transaction (read-only), then do the planned work in the run's ONE fenced transaction. */
    record Batch(List<Long> ids) {}

    static final class SettleBatches implements TaskWork<Batch> {
        private final DataSource reads;

        SettleBatches(DataSource reads) {
            this.reads = reads;
        }

        @Override
        public Batch plan(RunContext run) throws Exception {
            List<Long> ids = org.jooq.impl.DSL.using(reads, org.jooq.SQLDialect.POSTGRES)
                    .select(field("id", Long.class)).from(table("payment"))
                    .where(field("status").eq("PENDING")).orderBy(field("id")).limit(100).fetch().into(Long.class);
            return ids.isEmpty() ? null : new Batch(ids);          // null: nothing to do, no transaction
        }

        @Override
        public long run(FencedContext ctx, Batch batch) {
            return ctx.update(table("payment")).set(field("status"), "SETTLED")  // stamped with the run's term
                    .where(field("id").in(batch.ids())).and(field("status").eq("PENDING")).execute();
        }

        @Override
        public WriteDescription describe(Batch batch) {                         // what a rejection's audit row says
            return WriteDescription.of("public.payment", "UPDATE", "batch-" + batch.ids().get(0), null);
        }
    }
    // end::plan-and-run[]

    static LeaderTask build(ElectionSession session, FencedWriter writer, DataSource reads) {
        // tag::configure[]
        LeaderTask task = LeaderTask.builder(session, writer, "settlement", new SettleBatches(reads))
                .config(LeaderTaskConfig.builder()
                        .candidateId("settler-" + ProcessHandle.current().pid())
                        .idleInterval(Duration.ofSeconds(2))     // pause when a plan found nothing
                        .handoverTimeout(Duration.ofSeconds(10)) // close() lets the current run finish this long
                        .build())
                .listener(new TaskListener() {
                    @Override
                    public void onRunFinished(RunResult run) {
                        if (run.outcome() == RunOutcome.REJECTED_STALE) {
                            System.out.println("deposed at term " + run.term() + ": resigned, campaigning again");
                        }
                    }
                })
                .build();
        task.start();
        Runtime.getRuntime().addShutdownHook(new Thread(task::close));  // SIGTERM: finish the run, resign
        // end::configure[]
        return task;
    }

    static LeaderTaskConfig scheduled() {
        // tag::schedules[]
        TaskSchedule everyMinute = TaskSchedule.fixedRate(Duration.ofMinutes(1));      // from each run's start
        TaskSchedule nightly = TaskSchedule.of("02:00 Europe/Paris", (lastStart, lastEnd) -> {
            ZonedDateTime after = lastStart.atZone(ZoneId.of("Europe/Paris"));
            ZonedDateTime today = after.with(LocalTime.of(2, 0));
            return (today.isAfter(after) ? today : today.plusDays(1)).toInstant(); // or a cron library's next()
        });
        LeaderTaskConfig config = LeaderTaskConfig.builder()
                .schedule(nightly)                       // default: TaskSchedule.fixedDelay() (interval, idleInterval)
                .failureBackoff(Duration.ofMinutes(1))   // a failed run is retried then, under every schedule
                .build();
        // end::schedules[]
        return config;
    }
}
