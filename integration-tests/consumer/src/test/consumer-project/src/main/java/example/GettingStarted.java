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
import dev.fenceline.task.TaskHealth;
import dev.fenceline.task.TaskPhase;
import dev.fenceline.task.TaskWork;
import com.zaxxer.hikari.HikariDataSource;
import org.flywaydb.core.Flyway;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The examples of docs/getting-started.md (compiled against the published artifacts; DocsExamplesTest keeps the
 * docs equal to the regions). {@code java example.GettingStarted migrate} applies the migrations as the migration
 * owner (JDBC_URL, MIGRATION_USER, MIGRATION_PASSWORD; the application's own in {@code classpath:db/settlement});
 * without arguments it is the service (JDBC_URL, DB_USER, DB_PASSWORD of a fencing_app login, FENCELINE_ETCD), which
 * settles {@code settlement.payment} while leader until the JVM is stopped.
 */
public final class GettingStarted {
    private GettingStarted() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("migrate")) {
            migrate();
        } else {
            watch(start());
        }
    }

    static void migrate() {
        // tag::migrate[]
        PGSimpleDataSource owner = new PGSimpleDataSource();     // the migration owner, never the service's login
        owner.setUrl(System.getenv("JDBC_URL"));
        owner.setUser(System.getenv("MIGRATION_USER"));
        owner.setPassword(System.getenv("MIGRATION_PASSWORD"));
        FencingMigrations.migrate(owner);    // schema fencing and the fencing_* roles; a no-op when up to date
        Flyway.configure().dataSource(owner).schemas("settlement")        // then your own migrations, which
                .locations("classpath:db/settlement").load().migrate();   // create and protect your tables
        // end::migrate[]
    }

    static LeaderTask start() {
        // tag::first-commit[]
        ElectionConfig config = ElectionConfig.builder().environment(System.getenv()).build(); // FENCELINE_ETCD
        HikariDataSource db = Databases.dataSource(DatabaseConfig.builder(System.getenv("JDBC_URL"))  // DB_USER is
                .username(System.getenv("DB_USER")).password(System.getenv("DB_PASSWORD")).build()); // in fencing_app
        ElectionSession session = ElectionSession.open(config);   // its shutdown hook closes the task first
        FencedWriter writer = FencedWriter.create(db, FencedWriterConfig.defaults());
        LeaderTask task = LeaderTask.builder(session, writer, "settlement", TaskWork.of(ctx -> {
            int settled = ctx.update(table("settlement.payment")).set(field("status"), "SETTLED")  // each run: ONE
                    .where(field("id").in(ctx.dsl().select(field("id")).from(table("settlement.payment")) // fenced
                            .where(field("status").eq("PENDING")).limit(100)))        // transaction at the term
                    .execute();
            if (settled > 0) {
                System.out.println("settled " + settled + " payments at term " + ctx.term());
            }
            return settled;                                   // 0: nothing to do, next run after idleInterval
        })).build();
        task.start();      // warm-up, term floor above the database's mark, campaign; runs only while leader
        // end::first-commit[]
        return task;
    }

    static void watch(LeaderTask task) throws InterruptedException {
        // tag::health[]
        while (true) {                                     // until the JVM is stopped; its shutdown hooks hand over
            TaskHealth health = task.health();             // no I/O: cheap enough for a health endpoint
            if (health.phase() == TaskPhase.FAILED) {      // stopped for good, resigned; health.up() is false
                System.err.println("settlement task stopped: " + health.failure());   // what failed, and the fix
                System.exit(1);
            }
            Thread.sleep(5_000);
        }
        // end::health[]
    }
}
