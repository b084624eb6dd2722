package dev.fenceline.spring.scheduled;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.name;
import static org.jooq.impl.DSL.table;

import dev.fenceline.fencing.FencedContext;
import dev.fenceline.spring.FencedLeaderTask;
import java.time.OffsetDateTime;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.springframework.stereotype.Component;

/**
 * A task on a fixed rate read from the environment: each run writes one row and reports one unit, which under the
 * default schedule (interval 0) would start the next run at once.
 */
@Component
public class TickTask {
    static final Table<Record> TICK = table(name("tick"));
    static final Field<OffsetDateTime> AT = field(name("at"), OffsetDateTime.class);

    // tag::fixed-rate[]
    @FencedLeaderTask(resource = "ticks", fixedRate = "${ticks.rate:PT1M}") // or fixedDelay, or cron (+ zone)
    long tick(FencedContext ctx) {
        return ctx.insertInto(TICK).set(AT, OffsetDateTime.now()).execute(); // 1 unit, yet no run before the next tick
    }
    // end::fixed-rate[]
}
