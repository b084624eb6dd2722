package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/** What an advance waits for, and what it ends: liveness of the fence, bounded by advance_timeout. */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdvanceLivenessIT {
    private TestDatabase db;

    @BeforeAll
    void migrate(TestDatabase db) throws SQLException {
        this.db = db;
        FencingMigrations.migrate(db.dataSource());
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            s.execute("UPDATE fencing.settings SET value = '2s' WHERE name = 'advance_timeout'");
            s.execute("SELECT fencing.register_resource('liveness')");
            s.execute("SELECT fencing.enter('liveness', 5, 'a')");
        }
    }

    private static String text(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    /**
     * A leader frozen right after its first transaction advanced the mark keeps that transaction open, holding the mark
     * row and the fence lock exclusively. The next leader's advance must not wait for it forever: after half of
     * advance_timeout it ends it, and its own advance commits.
     */
    @Test
    void anAdvanceLeftOpenByAFrozenLeaderIsEndedByTheNextLeadersAdvance() throws Exception {
        try (Connection frozen = db.dataSource().getConnection();
                Statement f = frozen.createStatement();
                Connection next = db.dataSource().getConnection();
                Statement n = next.createStatement()) {
            frozen.setAutoCommit(false);
            assertThat(text(f, "SELECT fencing.enter('liveness', 6, 'b')")).isEqualTo("6"); // advanced, still open
            assertThat(text(n, "SELECT fencing.enter('liveness', 7, 'c')")).isEqualTo("7");
            assertThatThrownBy(frozen::commit).isInstanceOf(SQLException.class);
            assertThat(text(
                            n,
                            "SELECT highest_accepted || ' ' || leader_id FROM fencing.high_water_mark"
                                    + " WHERE resource = 'liveness'"))
                    .isEqualTo("7 c");
            assertThat(text(
                            n,
                            "SELECT string_agg(term::text, ',' ORDER BY term) FROM fencing.term_history"
                                    + " WHERE resource = 'liveness'"))
                    .as("the frozen advance never committed")
                    .isEqualTo("5,7");
        }
    }
}
