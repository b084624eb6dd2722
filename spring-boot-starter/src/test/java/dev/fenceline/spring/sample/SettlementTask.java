package dev.fenceline.spring.sample;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.name;
import static org.jooq.impl.DSL.table;

import dev.fenceline.fencing.FencedContext;
import dev.fenceline.spring.FencedLeaderTask;
import dev.fenceline.spring.FencelineProperties;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.springframework.stereotype.Component;

/** Settles the oldest unsettled request, one per run, in one fenced transaction. */
@Component
public class SettlementTask {
    static final Table<Record> REQUEST = table(name("request"));
    static final Table<Record> SETTLEMENT = table(name("settlement"));
    static final Field<Long> ID = field(name("id"), Long.class);
    static final Field<Long> REQUEST_ID = field(name("request_id"), Long.class);
    static final Field<String> SETTLED_BY = field(name("settled_by"), String.class);

    private final String candidateId;

    public SettlementTask(FencelineProperties properties) {
        this.candidateId = properties.getElection().candidateId();
    }

    // spotless:off (the docs show this region as it is)

    // tag::minimal-task[]
    @FencedLeaderTask                       // resource and election: fenceline.election.name
    long settle(FencedContext ctx) {        // one fenced transaction per run, only while leader
        Long next = ctx.dsl().select(ID).from(REQUEST)
                .whereNotExists(ctx.dsl().selectOne().from(SETTLEMENT).where(REQUEST_ID.eq(ID)))
                .orderBy(ID).limit(1).fetchOne(ID);
        if (next == null) {
            return 0;
        }
        return ctx.insertInto(SETTLEMENT).set(REQUEST_ID, next).set(SETTLED_BY, candidateId).execute();
    }
    // end::minimal-task[]
    // spotless:on
}
