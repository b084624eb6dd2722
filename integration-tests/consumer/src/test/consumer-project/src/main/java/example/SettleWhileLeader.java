package example;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.table;

import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencedWriterConfig;
import dev.fenceline.migrations.FencingMigrations;
import dev.fenceline.task.LeaderTask;
import dev.fenceline.task.TaskWork;
import com.zaxxer.hikari.HikariDataSource;
import java.util.concurrent.CountDownLatch;

/**
 * The README's example, as a user would write it: settle pending payments in batches, only while leader, each batch
 * one fenced transaction at the leader's term. Needs JDBC_URL, DB_USER, DB_PASSWORD and FENCELINE_ETCD, and a table
 * {@code payment(id, status)} that the application's own migration protected with {@code fencing.protect_table}.
 * Exits when nothing is pending.
 */
public final class SettleWhileLeader {
    public static void main(String[] args) throws Exception {
        // tag::readme[]
        ElectionConfig config = ElectionConfig.builder().environment(System.getenv()).build(); // FENCELINE_ETCD
        try (HikariDataSource db = Databases.dataSource(DatabaseConfig.builder(System.getenv("JDBC_URL"))
                     .username(System.getenv("DB_USER")).password(System.getenv("DB_PASSWORD")).build());
             ElectionSession session = ElectionSession.open(config)) {
            FencingMigrations.migrate(db);             // the fencing schema; your own migration protects tables
            FencedWriter writer = FencedWriter.create(db, FencedWriterConfig.defaults());
            CountDownLatch drained = new CountDownLatch(1); // a service would run until it is stopped
            try (LeaderTask task = LeaderTask.builder(session, writer, "settlement", TaskWork.of(ctx -> {
                int settled = ctx.update(table("payment")).set(field("status"), "SETTLED")   // each run: ONE fenced
                        .where(field("id").in(ctx.dsl().select(field("id")).from(table("payment")) // transaction
                                .where(field("status").eq("PENDING")).limit(100)))          // at the leader's term
                        .execute();
                if (settled > 0) {
                    System.out.println("settled " + settled + " payments at term " + ctx.term());
                } else {
                    drained.countDown();
                }
                return settled;
            })).build()) {
                task.start();      // warm-up, term floor above the database's mark, campaign; runs only while leader
                drained.await();
            }                      // close(): the current run finishes, then resign: a successor takes over at once
        }
        // end::readme[]
    }
}
