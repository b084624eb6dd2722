package example;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.table;

import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.Leadership;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencedWriterConfig;
import dev.fenceline.fencing.FencingToken;
import dev.fenceline.fencing.StaleTermException;
import dev.fenceline.migrations.FencingMigrations;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;

/**
 * The README's example, as a user would write it: settle pending payments in batches, only while leader, each batch
 * one fenced transaction. Needs JDBC_URL, DB_USER, DB_PASSWORD and FENCELINE_ETCD, and a table {@code payment(id,
 * status)} that the application's own migration protected with {@code fencing.protect_table}. Exits when nothing is
 * pending.
 */
public final class SettleWhileLeader {
    public static void main(String[] args) throws Exception {
        // tag::readme[]
        ElectionConfig config = ElectionConfig.builder().environment(System.getenv()).build(); // FENCELINE_ETCD
        try (HikariDataSource db = Databases.dataSource(DatabaseConfig.builder(System.getenv("JDBC_URL"))
                     .username(System.getenv("DB_USER")).password(System.getenv("DB_PASSWORD")).build());
             ElectionSession session = ElectionSession.open(config);
             LeaderElection election = session.election("settlement", "worker-" + ProcessHandle.current().pid())) {
            FencingMigrations.migrate(db);             // the fencing schema; your own migration protects tables
            FencedWriter writer = FencedWriter.create(db, FencedWriterConfig.defaults());
            election.start();
            int settled = -1;
            while (settled != 0) {                       // a service would loop until it is stopped
                Leadership leadership = election.awaitLeadership(Duration.ofMinutes(1));
                FencingToken token = FencingToken.of("settlement", leadership.term(), election.candidateId());
                try {
                    while (leadership.isValidNow() && (settled = writer.transaction(token, ctx -> ctx
                            .update(table("payment")).set(field("status"), "SETTLED")
                            .where(field("id").in(ctx.dsl().select(field("id")).from(table("payment"))
                                    .where(field("status").eq("PENDING")).limit(100)))
                            .execute())) > 0) {
                        System.out.println("settled " + settled + " payments at term " + token.term());
                    }
                } catch (StaleTermException deposed) {   // a newer term was accepted: nothing of this batch
                    System.out.println("deposed: " + deposed.getMessage()); // persisted, the rejection is
                }                                        // audited in fencing.rejected_write; campaign again
            }
        }
        // end::readme[]
    }
}
