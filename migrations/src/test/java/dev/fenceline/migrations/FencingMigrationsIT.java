package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FencingMigrationsIT {
    /** Everything migrations define, as text: tables/columns, functions, views, grants. */
    private static final String SCHEMA_FINGERPRINT = "SELECT md5(string_agg(x, E'\\n' ORDER BY x)) FROM ("
            + " SELECT 'col:' || table_name || '.' || column_name || ':' || data_type || ':' || coalesce(column_default, '') AS x"
            + "   FROM information_schema.columns WHERE table_schema = 'fencing'"
            + " UNION ALL SELECT 'fn:' || p.oid::regprocedure::text || ':' || md5(p.prosrc) || ':' || coalesce(array_to_string(p.proacl, ','), '')"
            + "   FROM pg_proc p WHERE p.pronamespace = 'fencing'::regnamespace"
            + " UNION ALL SELECT 'rel:' || c.relname || ':' || c.relkind::text || ':' || coalesce(array_to_string(c.relacl, ','), '')"
            + "   FROM pg_class c WHERE c.relnamespace = 'fencing'::regnamespace) s";

    private TestDatabase db;

    @BeforeAll
    void migrateOnce(TestDatabase db) {
        this.db = db;
        // Every versioned and repeatable migration in the folder, once.
        assertThat(FencingMigrations.migrate(db.dataSource())).isEqualTo(migrationFiles());
    }

    private static long migrationFiles() {
        try (java.util.stream.Stream<java.nio.file.Path> files =
                java.nio.file.Files.list(java.nio.file.Path.of("src/main/resources/db/fencing"))) {
            return files.filter(f -> f.getFileName().toString().matches("[VR].*__.*\\.sql"))
                    .count();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private Connection connect() throws SQLException {
        return DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password());
    }

    private String text(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    @Test
    void migrationsAppliedTwiceAreANoOp() throws Exception {
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            String before = text(s, SCHEMA_FINGERPRINT);
            String history = text(
                    s,
                    "SELECT string_agg(version || ':' || checksum, ',' ORDER BY installed_rank)"
                            + " FROM fencing.fencing_schema_history");
            assertThat(FencingMigrations.migrate(db.dataSource())).isZero();
            assertThat(text(s, SCHEMA_FINGERPRINT)).isEqualTo(before);
            assertThat(text(
                            s,
                            "SELECT string_agg(version || ':' || checksum, ',' ORDER BY installed_rank)"
                                    + " FROM fencing.fencing_schema_history"))
                    .isEqualTo(history);
            // Coexists with an application's own Flyway: no default history table was created.
            assertThat(text(s, "SELECT count(*) FROM pg_class WHERE relname = 'flyway_schema_history'"))
                    .isEqualTo("0");
        }
    }

    @Test
    void appRoleCannotUpdateOrDeleteMarksNorChangeAuditAndHistoryExceptThroughFunctions() throws Exception {
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            s.execute("SELECT fencing.register_resource('grants')");
            s.execute("SET ROLE fencing_app");
            denied(s, "UPDATE fencing.high_water_mark SET highest_accepted = 99");
            denied(s, "DELETE FROM fencing.high_water_mark");
            denied(s, "INSERT INTO fencing.high_water_mark (resource) VALUES ('x')");
            denied(s, "DELETE FROM fencing.rejected_write");
            denied(s, "UPDATE fencing.rejected_write SET reason = 'no_term'");
            denied(s, "TRUNCATE fencing.rejected_write");
            denied(s, "INSERT INTO fencing.rejected_write (resource) VALUES ('x')");
            denied(s, "DELETE FROM fencing.term_history");
            denied(s, "UPDATE fencing.term_history SET term = 1");
            denied(s, "TRUNCATE fencing.term_history");
            denied(s, "UPDATE fencing.settings SET value = '1s'");
            denied(s, "DELETE FROM fencing.fencing_schema_history");
            // ... but through the functions it can do its job.
            assertThat(text(s, "SELECT fencing.enter('grants', 3, 'app')")).isEqualTo("3");
            assertThat(text(s, "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = 'grants'"))
                    .isEqualTo("3");
            assertThat(text(s, "SELECT fencing.record_rejection('grants', 2, 3, 'app', 't', 'INSERT', 'k', NULL) > 0"))
                    .isEqualTo("t");
            s.execute("RESET ROLE");
            assertThat(text(s, "SELECT db_user FROM fencing.rejected_write WHERE resource = 'grants'"))
                    .isEqualTo("postgres");
        }
    }

    @Test
    void auditorIsReadOnly() throws Exception {
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            s.execute("SET ROLE fencing_auditor");
            text(s, "SELECT count(*) FROM fencing.rejected_write");
            text(s, "SELECT count(*) FROM fencing.term_history");
            text(s, "SELECT count(*) FROM fencing.recent_rejections");
            text(s, "SELECT count(*) FROM fencing.rejections_daily");
            text(s, "SELECT count(*) FROM fencing.current_marks");
            text(s, "SELECT count(*) FROM fencing.break_glass_log");
            denied(s, "INSERT INTO fencing.rejected_write (resource) VALUES ('x')");
            denied(s, "DELETE FROM fencing.rejected_write");
            denied(s, "UPDATE fencing.high_water_mark SET highest_accepted = 1");
            denied(s, "SELECT fencing.enter('grants', 10)");
            denied(s, "SELECT fencing.record_rejection('grants', 1, 2, NULL, NULL, NULL, NULL, NULL)");
            denied(s, "SELECT fencing.register_resource('auditor-made')");
        }
    }

    @Test
    void publicHasNoAccessToTheSchema() throws Exception {
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            s.execute("DROP ROLE IF EXISTS fencing_it_nobody");
            s.execute("CREATE ROLE fencing_it_nobody NOLOGIN");
            try {
                s.execute("SET ROLE fencing_it_nobody");
                denied(s, "SELECT * FROM fencing.high_water_mark");
                denied(s, "SELECT fencing.enter('grants', 10)");
                s.execute("RESET ROLE");
            } finally {
                s.execute("RESET ROLE");
                s.execute("DROP ROLE fencing_it_nobody");
            }
        }
    }

    private static void denied(Statement s, String sql) {
        assertThatThrownBy(() -> s.execute(sql))
                .as(sql)
                .isInstanceOfSatisfying(
                        SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("42501"));
    }
}
