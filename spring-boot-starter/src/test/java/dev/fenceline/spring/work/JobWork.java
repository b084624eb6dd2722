package dev.fenceline.spring.work;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.name;
import static org.jooq.impl.DSL.table;

import dev.fenceline.fencing.FencedContext;
import dev.fenceline.fencing.WriteDescription;
import dev.fenceline.spring.FencedLeaderTask;
import dev.fenceline.task.RunContext;
import dev.fenceline.task.TaskWork;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/** Plans the next job outside the transaction, marks it done inside the fenced one; describes it for the audit. */
@Component
@FencedLeaderTask(resource = "work")
public class JobWork implements TaskWork<Long> {
    private final JdbcTemplate jdbc;

    public JobWork(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Override
    public Long plan(RunContext run) {
        return jdbc.query(
                "SELECT id FROM job WHERE id NOT IN (SELECT job_id FROM job_done) ORDER BY id LIMIT 1",
                rs -> rs.next() ? rs.getLong(1) : null);
    }

    @Override
    public long run(FencedContext ctx, Long job) {
        return ctx.insertInto(table(name("job_done")))
                .set(field(name("job_id"), Long.class), job)
                .execute();
    }

    @Override
    public WriteDescription describe(Long job) {
        return WriteDescription.of("public.job_done", "INSERT", "job-" + job, null);
    }
}
