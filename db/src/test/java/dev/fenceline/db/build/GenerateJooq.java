package dev.fenceline.db.build;

import dev.fenceline.migrations.FencingMigrations;
import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.TestDatabase;
import java.nio.file.Path;
import org.jooq.codegen.GenerationTool;
import org.jooq.meta.jaxb.Configuration;
import org.jooq.meta.jaxb.Database;
import org.jooq.meta.jaxb.Generate;
import org.jooq.meta.jaxb.Generator;
import org.jooq.meta.jaxb.Jdbc;
import org.jooq.meta.jaxb.Target;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * "Migrate, then generate": starts a throwaway PostgreSQL (testkit), applies the fencing migrations, and runs jOOQ's
 * code generator over schema {@code fencing}. Its output is committed under {@code db/src/main/generated}, so a
 * consumer's build needs no PostgreSQL; {@code GeneratedSourcesMatchMigrationsIT} fails when the committed classes
 * differ from what the migrations generate.
 *
 * <p>Two callers: that IT, and {@code mvn -B -ntp -pl db -am process-test-classes -Pjooq-codegen}, which runs
 * {@link #main} on the module's test classpath to rewrite {@code src/main/generated}. Argument:
 * {@code <outputDirectory>}. Optional system properties:
 * {@code -Dfenceline.codegen.jdbcUrl=...} (+ {@code .user}/{@code .password}) to use an existing empty database
 * instead of starting a server.
 */
public final class GenerateJooq {
    public static final String PACKAGE = "dev.fenceline.db.generated";

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: GenerateJooq <outputDirectory>");
        }
        Path out = Path.of(args[0]).toAbsolutePath();
        String url = System.getProperty("fenceline.codegen.jdbcUrl");
        long started = System.nanoTime();
        if (url != null && !url.isBlank()) {
            generate(
                    url,
                    System.getProperty("fenceline.codegen.user", "postgres"),
                    System.getProperty("fenceline.codegen.password"),
                    out);
        } else {
            generateWithThrowawayServer(out);
        }
        System.out.printf(
                "[jooq-codegen] generated %s into %s in %d ms%n",
                PACKAGE, out, (System.nanoTime() - started) / 1_000_000);
    }

    /** Starts a throwaway PostgreSQL, migrates an empty database and generates into {@code out} (cleaned first). */
    public static void generateWithThrowawayServer(Path out) throws Exception {
        try (PostgresServer server = PostgresServer.start(PostgresServer.Options.defaults());
                TestDatabase db = server.createDatabase("jooq_codegen")) {
            generate(db.jdbcUrl(), db.user(), db.password(), out);
        }
    }

    private static void generate(String url, String user, String password, Path out) throws Exception {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(url);
        ds.setUser(user);
        if (password != null) {
            ds.setPassword(password);
        }
        FencingMigrations.migrate(ds);
        Configuration config = new Configuration()
                .withJdbc(new Jdbc()
                        .withDriver("org.postgresql.Driver")
                        .withUrl(url)
                        .withUser(user)
                        .withPassword(password))
                .withGenerator(new Generator()
                        .withDatabase(new Database()
                                .withName("org.jooq.meta.postgres.PostgresDatabase")
                                .withInputSchema(FencingMigrations.SCHEMA)
                                // Internal helpers of the trigger and dblink's functions are not API.
                                .withExcludes(FencingMigrations.HISTORY_TABLE
                                        + "|dblink.*|conninfo_quote|check_resource_name|guard|guard_slow"
                                        + "|audit_autonomously|log_break_glass|lock_key_seq|protect_table|unprotect_table"
                                        // the fence's internals (R__20, R__50)
                                        + "|rejection_detail|reject|reject_term_conflict|holds_share|mark_entered|advance"
                                        + "|session_entering_table|check_writers_transaction|begin_write|operations_to_fence"
                                        + "|terminate_backend|prepared_holding|enter_at|check_leader_id|mark_moved_since_snapshot|register_protected"
                                        + "|unregister_protected|children_protected_automatically|protect_one|descendants"
                                        + "|protect_new_children|forget_dropped_tables|install_event_triggers"
                                        // the audit's internals (R__30, V7)
                                        + "|audit_here_condition"
                                        + "|check_rejection_claim|append_trigger_rejection|audit_dblink_refusal"
                                        + "|audit_connection_target|audit_self_target|check_setting|rejection_reasons|configure_audit_writer"
                                        + "|audit_path|rejections_.*"))
                        .withGenerate(new Generate()
                                .withJavaTimeTypes(true)
                                .withRecords(true)
                                .withPojos(false)
                                .withRoutines(true)
                                .withGeneratedAnnotation(false)
                                .withComments(true))
                        .withTarget(new Target()
                                .withPackageName(PACKAGE)
                                .withDirectory(out.toString())
                                .withClean(true)));
        GenerationTool.generate(config);
    }
}
