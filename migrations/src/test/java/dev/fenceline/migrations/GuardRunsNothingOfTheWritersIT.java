package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.testkit.NativeGuard;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The guard runs as the owner of the fencing functions, in both implementations: nothing of the writing login's may run
 * with those rights, and a term is honoured only from a session user in fencing_app, on the common path as on the slow
 * one.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GuardRunsNothingOfTheWritersIT {
    private static final String PASSWORD = "guard-privileges-0123456789";
    private TestDatabase db;

    @BeforeAll
    void migrate(TestDatabase db) throws SQLException {
        this.db = db;
        FencingMigrations.migrate(db.dataSource());
        db.server().createLoginRole("gp_outsider", PASSWORD);
        db.server().createLoginRole("gp_app", PASSWORD, "fencing_app");
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE gp_ledger (id int PRIMARY KEY, note text)");
            s.execute("SELECT fencing.protect_table('gp_ledger', 'gp')");
            s.execute("GRANT SELECT, INSERT, UPDATE ON gp_ledger TO gp_outsider, gp_app");
            s.execute("SELECT fencing.enter('gp', 5, 'a')");
        }
    }

    private Connection as(String role) throws SQLException {
        return DriverManager.getConnection(db.jdbcUrl(), role, PASSWORD);
    }

    private void use(String implementation) throws SQLException {
        if (implementation.equals("native")) {
            NativeGuard.assumeLoads(db);
        }
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            s.execute("SELECT fencing.use_" + implementation + "_guard()");
        }
    }

    private String text(String sql) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"plpgsql", "native"})
    void aTemporaryDomainNamedLikeAGuardsTypeRunsNothingAsTheOwner(String implementation) throws Exception {
        use(implementation);
        String marks =
                text("SELECT highest_accepted || ' ' || leader_id FROM fencing.high_water_mark WHERE resource = 'gp'");
        try (Connection c = as("gp_app");
                Statement s = c.createStatement()) {
            // A domain over text whose CHECK calls the login's own function: resolved as the guard's "text" type when
            // pg_temp comes first on the guard's search path, it would run as the owner of the fencing functions.
            s.execute("CREATE FUNCTION pg_temp.evil(x pg_catalog.text) RETURNS boolean LANGUAGE plpgsql AS"
                    + " $$BEGIN UPDATE fencing.high_water_mark SET highest_accepted = 99 WHERE resource = 'gp';"
                    + " RETURN true; END$$");
            s.execute("CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (pg_temp.evil(VALUE))");
            s.execute("CREATE DOMAIN pg_temp.int8 AS pg_catalog.int8 CHECK (pg_temp.evil(VALUE::pg_catalog.text))");
            c.setAutoCommit(false);
            s.execute("SET LOCAL fencing.term = '5'");
            s.execute("INSERT INTO gp_ledger VALUES (" + (implementation.equals("native") ? 2 : 1) + ", 'at 5')");
            c.commit();
        }
        assertThat(
                        text(
                                "SELECT highest_accepted || ' ' || leader_id FROM fencing.high_water_mark WHERE resource = 'gp'"))
                .as("the mark after a write by a login with its own temporary domains")
                .isEqualTo(marks);
    }

    @ParameterizedTest
    @ValueSource(strings = {"plpgsql", "native"})
    void aLoginOutsideFencingAppCannotWriteAtTheCurrentTerm(String implementation) throws Exception {
        use(implementation);
        long before = Long.parseLong(text("SELECT count(*) FROM fencing.rejected_write WHERE resource = 'gp'"));
        try (Connection c = as("gp_outsider");
                Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("SET LOCAL fencing.term = '5'");
            assertThatThrownBy(() -> s.execute("INSERT INTO gp_ledger VALUES (10, 'outsider at the current term')"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("42501"));
            c.rollback();
        }
        assertThat(text("SELECT count(*) FROM gp_ledger WHERE id = 10")).isEqualTo("0");
        assertThat(Long.parseLong(text("SELECT count(*) FROM fencing.rejected_write WHERE resource = 'gp'")))
                .as("audited once")
                .isEqualTo(before + 1);
    }
}
