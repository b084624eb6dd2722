package dev.fenceline.db.build;

import dev.fenceline.migrations.FencingMigrations;
import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.TestDatabase;
import java.io.IOException;
import java.io.InputStream;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.jooq.codegen.GenerationTool;
import org.jooq.meta.jaxb.Configuration;
import org.jooq.meta.jaxb.Database;
import org.jooq.meta.jaxb.Generate;
import org.jooq.meta.jaxb.Generator;
import org.jooq.meta.jaxb.Jdbc;
import org.jooq.meta.jaxb.Target;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Build-time "migrate, then generate": starts a throwaway PostgreSQL (testkit), applies the fencing migrations,
 * and runs jOOQ's code generator over schema {@code fencing}.
 *
 * <p>Launched by {@code exec-maven-plugin} as a Java single-file source program (nothing to compile first), with
 * the module's test classpath. Arguments: {@code <outputDirectory>}. Optional system properties:
 * {@code -Dfenceline.codegen.jdbcUrl=...} (+ {@code .user}/{@code .password}) to use an existing empty database
 * instead of starting a server; {@code -Dfenceline.codegen.force=true} to regenerate although the migrations are
 * unchanged (a stamp file with their SHA-256 sits next to the generated sources).
 */
public final class GenerateJooq {
    static final String PACKAGE = "dev.fenceline.db.generated";

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: GenerateJooq <outputDirectory>");
        }
        Path out = Path.of(args[0]).toAbsolutePath();
        Path stamp = out.resolve(".migrations.sha256");
        String digest = migrationsDigest();
        boolean force = Boolean.getBoolean("fenceline.codegen.force");
        if (!force && Files.isRegularFile(stamp) && Files.readString(stamp).strip().equals(digest)
                && Files.isDirectory(out.resolve(PACKAGE.replace('.', '/')))) {
            System.out.println("[jooq-codegen] migrations unchanged (" + digest.substring(0, 12) + "), sources up to date");
            return;
        }
        String url = System.getProperty("fenceline.codegen.jdbcUrl");
        long started = System.nanoTime();
        if (url != null && !url.isBlank()) {
            generate(url, System.getProperty("fenceline.codegen.user", "postgres"),
                    System.getProperty("fenceline.codegen.password"), out);
        } else {
            try (PostgresServer server = PostgresServer.start(PostgresServer.Options.defaults());
                 TestDatabase db = server.createDatabase("jooq_codegen")) {
                generate(db.jdbcUrl(), db.user(), db.password(), out);
            }
        }
        Files.writeString(stamp, digest + System.lineSeparator());
        System.out.printf("[jooq-codegen] generated %s into %s in %d ms%n", PACKAGE, out,
                (System.nanoTime() - started) / 1_000_000);
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
                .withJdbc(new Jdbc().withDriver("org.postgresql.Driver").withUrl(url).withUser(user)
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
                                        + "|terminate_backend|prepared_holding|enter_at|register_protected"
                                        + "|unregister_protected|children_protected_automatically|protect_one|descendants"
                                        + "|protect_new_children|forget_dropped_tables|install_event_triggers"
                                        // the audit's internals (R__30, V7)
                                        + "|check_rejection_claim|append_trigger_rejection|audit_dblink_refusal"
                                        + "|audit_connection_target|check_setting|rejection_reasons|configure_audit_writer"
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

    /** SHA-256 over the names and contents of every resource under db/fencing on the classpath. */
    private static String migrationsDigest() throws IOException, NoSuchAlgorithmException, URISyntaxException {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        List<String> names = new ArrayList<>();
        ClassLoader cl = GenerateJooq.class.getClassLoader();
        for (URL url : Collections.list(cl.getResources("db/fencing"))) {
            if ("file".equals(url.getProtocol())) {
                try (Stream<Path> files = Files.list(Path.of(url.toURI()))) {
                    files.forEach(p -> names.add("db/fencing/" + p.getFileName()));
                }
            } else if ("jar".equals(url.getProtocol())) {
                try (JarFile jar = ((JarURLConnection) url.openConnection()).getJarFile()) {
                    for (JarEntry e : Collections.list(jar.entries())) {
                        if (e.getName().startsWith("db/fencing/") && !e.isDirectory()) {
                            names.add(e.getName());
                        }
                    }
                }
            }
        }
        Collections.sort(names);
        for (String name : names) {
            md.update(name.getBytes(StandardCharsets.UTF_8));
            try (InputStream in = cl.getResourceAsStream(name)) {
                md.update(in.readAllBytes());
            }
        }
        String self = System.getProperty("fenceline.codegen.source");   // this file: config changes regenerate too
        if (self != null && Files.isRegularFile(Path.of(self))) {
            md.update(Files.readAllBytes(Path.of(self)));
        }
        return HexFormat.of().formatHex(md.digest());
    }
}
