package dev.fenceline.spring.plain;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.name;
import static org.jooq.impl.DSL.table;

import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.Leadership;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencingToken;
import dev.fenceline.fencing.StaleTermException;
import java.util.Optional;
import org.springframework.stereotype.Service;

/**
 * Writes with the auto-configured election and writer, without a fenced task. Being a bean of the application, it is
 * created before the auto-configured ones: its FencedWriter must still wait for the fencing migrations and then the
 * application's Flyway.
 */
@Service
public class LedgerService {
    // spotless:off (the docs show this region as it is)
    // tag::own-writes[]
    private final LeaderElection election;   // fenceline.election.name, started with the context
    private final FencedWriter writer;       // on the application's DataSource

    public LedgerService(LeaderElection election, FencedWriter writer) {
        this.election = election;
        this.writer = writer;
    }

    /** Records an entry if this instance leads; PostgreSQL rejects it if a newer term was accepted meanwhile. */
    public boolean record(long id) {
        Optional<Leadership> leadership = election.leadership().filter(Leadership::isValidNow);
        if (leadership.isEmpty()) {
            return false;
        }
        FencingToken token = FencingToken.of("ledger", leadership.get().term(), election.candidateId());
        try {
            return writer.transaction(token, ctx -> ctx.insertInto(table(name("ledger_entry")))
                    .set(field(name("id"), Long.class), id).execute()) == 1;
        } catch (StaleTermException deposed) {   // nothing persisted; audited in fencing.rejected_write
            return false;
        }
    }
    // end::own-writes[]
    // spotless:on
}
