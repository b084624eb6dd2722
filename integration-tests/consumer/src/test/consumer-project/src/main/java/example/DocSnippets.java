package example;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.table;

import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.Leadership;
import dev.fenceline.fencing.FencedWork;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.FencedWriterConfig;
import dev.fenceline.fencing.FencingToken;
import dev.fenceline.fencing.WriteDescription;
import dev.fenceline.migrations.FencingMigrations;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The Java blocks of docs/*.md, compiled against the published artifacts (DocsExamplesTest keeps them equal). */
final class DocSnippets {
    private static final Logger log = LoggerFactory.getLogger(DocSnippets.class);

    private DocSnippets() {
    }

    static void electionUsage(MeterRegistry prometheusRegistry, String host, FencedWriter writer, FencedWork<Integer> work)
            throws Exception {
        // tag::election-usage[]
        ElectionConfig cfg = ElectionConfig.builder()
            .endpoints(List.of("http://127.0.0.1:2379", "http://127.0.0.1:22379", "http://127.0.0.1:32379"))
            .ttl(Duration.ofSeconds(5))                       // everything else derives from the TTL
            .meterRegistry(prometheusRegistry)
            .build();                                         // validated here, clear messages
        try (ElectionSession session = ElectionSession.open(cfg)) {          // one lease for all elections
          LeaderElection election = session.election("settlement", "worker-1", Map.of("host", host));
          election.addListener(ev -> log.info("now {}", ev.state()));        // hint only
          election.start();
          Leadership l = election.awaitLeadership(Duration.ofMinutes(1));
          while (l.isValidNow()) {                           // cheap: two volatile reads + a clock read
            writer.transaction(FencingToken.of("settlement", l.term(), l.leaderId()), work);   // the real check
          }
        }
        // end::election-usage[]
    }

    static void fencingUsage(DataSource dataSource, String jdbcUrl, String user, String pw, Leadership leadership,
            String workerId, String batchKey, String payloadJson, List<Long> batch) {
        // tag::fencing-usage[]
        // once, at start-up (needs the privileges below): its own history table fencing.fencing_schema_history
        FencingMigrations.migrate(dataSource);
        // in the application's own Flyway migration, per table (idempotent, no rewrite, bounded lock):
        //   SELECT fencing.protect_table('settlement.payment'::regclass, 'settlement');        -- lock_timeout default '2s'
        HikariDataSource pool = Databases.dataSource(DatabaseConfig.builder(jdbcUrl).username(user).password(pw).build());
        FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
        FencingToken token = FencingToken.of("settlement", leadership.term(), workerId);
        writer.enter(token);   // optional: fence the old leader right when leadership starts, before the first write
        writer.transaction(token,
                WriteDescription.of("settlement.payment", "UPDATE", batchKey, payloadJson),   // recorded if rejected
                ctx -> ctx.update(table("settlement.payment")).set(field("status"), "SETTLED")  // stamps fencing_term
                        .where(field("id").in(batch)).execute());
        // end::fencing-usage[]
    }

    static void fencingRun(FencedWriter writer, FencingToken token, String batchKey, List<Long> batch) {
        // tag::fencing-run[]
        writer.run(token, WriteDescription.of("settlement.payment", "UPDATE", batchKey, null),
                ctx -> {                                         // no result: run(...) instead of transaction(...)
                    ctx.update(table("settlement.payment")).set(field("status"), "SETTLED")
                            .where(field("id").in(batch)).execute();
                    ctx.deleteFrom(table("settlement.payment_hold")).where(field("payment_id").in(batch)).execute();
                });
        // end::fencing-run[]
    }

    static void fencingPlainJdbc(FencedWriter writer, FencingToken token, long paymentId, long amountCents) {
        // tag::fencing-plain-jdbc[]
        writer.run(token, ctx -> {
            try (PreparedStatement ps = ctx.connection().prepareStatement(   // the fenced connection, in the transaction
                    "INSERT INTO settlement.payment (id, amount_cents, fencing_term) VALUES (?, ?, ?)")) {
                ps.setLong(1, paymentId);
                ps.setLong(2, amountCents);
                ps.setLong(3, ctx.term());                       // stamp the row with the transaction's term
                ps.executeUpdate();
            }                                                    // no commit/close: the writer commits or rolls back
        });
        // end::fencing-plain-jdbc[]
    }
}
