package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.count;
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

/** fencing.protect_table on tables that already hold data. */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RetrofitIT {
    private static final String SHAPE = "SELECT string_agg(x, ';' ORDER BY x) FROM ("
            + " SELECT 'c:' || conname || ':' || pg_get_constraintdef(oid) AS x FROM pg_constraint WHERE conrelid = '%1$s'::regclass"
            + " UNION ALL SELECT 'i:' || indexrelid::regclass::text || ':' || pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = '%1$s'::regclass) s";

    private TestDatabase db;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
    }

    private String text(String sql) throws SQLException {
        try (Connection c = Fixtures.connect(db);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    private void createLegacy(String name, int rows) {
        Fixtures.sql(
                db,
                "CREATE TABLE " + name + " (id bigint PRIMARY KEY, account text NOT NULL, amount numeric(12,2) NOT NULL"
                        + " CHECK (amount >= 0), booked_at timestamptz NOT NULL DEFAULT now(), UNIQUE (account, id))",
                "CREATE INDEX " + name + "_booked ON " + name + " (booked_at)",
                "INSERT INTO " + name + " (id, account, amount) SELECT g, 'acct-' || (g % 977), g % 1000"
                        + " FROM generate_series(1, " + rows + ") g",
                "ANALYZE " + name);
    }

    @Test
    void protectingALargeExistingTableKeepsDataAndConstraintsWithoutRewritingIt() throws Exception {
        createLegacy("legacy_ledger", 100_000);
        String shapeBefore = text(String.format(SHAPE, "legacy_ledger"));
        String checksumBefore = text("SELECT md5(string_agg(id || ':' || account || ':' || amount, ',' ORDER BY id))"
                + " FROM legacy_ledger");
        long fileBefore = count(db, "SELECT pg_relation_filenode('legacy_ledger')");

        assertThat(text("SELECT fencing.protect_table('legacy_ledger', 'legacy')"))
                .isEqualTo("protected (added column fencing_term bigint)");

        assertThat(count(db, "SELECT count(*) FROM legacy_ledger")).isEqualTo(100_000);
        assertThat(text("SELECT md5(string_agg(id || ':' || account || ':' || amount, ',' ORDER BY id))"
                        + " FROM legacy_ledger"))
                .isEqualTo(checksumBefore);
        assertThat(text(String.format(SHAPE, "legacy_ledger"))).isEqualTo(shapeBefore);
        // Same relfilenode: the column was added in the catalog only, the table was not rewritten.
        assertThat(count(db, "SELECT pg_relation_filenode('legacy_ledger')")).isEqualTo(fileBefore);
        assertThat(count(db, "SELECT count(*) FROM legacy_ledger WHERE fencing_term IS NOT NULL"))
                .isZero();
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.protected_table WHERE tbl = 'legacy_ledger'::regclass"
                                + " AND resource = 'legacy'"))
                .isEqualTo(1);
        // The constraints still bite.
        try (Connection c = Fixtures.connect(db);
                Statement s = c.createStatement()) {
            s.execute("SET fencing.term = '1'");
            s.execute("SET fencing.resource = 'legacy'");
            assertThatThrownBy(() -> s.execute("INSERT INTO legacy_ledger (id, account, amount) VALUES (1, 'x', 1)"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("23505"));
            assertThatThrownBy(() -> s.execute("INSERT INTO legacy_ledger (id, account, amount) VALUES (-1, 'x', -5)"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("23514"));
        }

        // Second call: a no-op (no lock taken, nothing altered).
        String shapeProtected = text(String.format(SHAPE, "legacy_ledger"));
        assertThat(text("SELECT fencing.protect_table('legacy_ledger', 'legacy')"))
                .isEqualTo("unchanged");
        assertThat(text(String.format(SHAPE, "legacy_ledger"))).isEqualTo(shapeProtected);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'legacy_ledger'::regclass"
                                + " AND NOT tgisinternal"))
                .isEqualTo(1);
    }

    @Test
    void protectFailsCleanlyWithinLockTimeoutWhileAnotherSessionHoldsAConflictingLock() throws Exception {
        createLegacy("busy_ledger", 1_000);
        try (Connection holder = Fixtures.connect(db);
                Statement h = holder.createStatement()) {
            holder.setAutoCommit(false);
            h.executeQuery("SELECT count(*) FROM busy_ledger").close(); // ACCESS SHARE until commit
            try (Connection c = Fixtures.connect(db);
                    Statement s = c.createStatement()) {
                assertThatThrownBy(() -> s.execute("SELECT fencing.protect_table('busy_ledger', 'legacy', '300ms')"))
                        .isInstanceOfSatisfying(SQLException.class, e -> {
                            assertThat(e.getSQLState()).isEqualTo("55P03");
                            assertThat(e.getMessage()).contains("lock_timeout 300ms", "nothing was changed");
                        });
                assertThat(count(
                                db,
                                "SELECT count(*) FROM pg_attribute WHERE attrelid = 'busy_ledger'::regclass"
                                        + " AND attname = 'fencing_term'"))
                        .isZero();
                assertThat(count(
                                db, "SELECT count(*) FROM fencing.protected_table WHERE tbl = 'busy_ledger'::regclass"))
                        .isZero();
                // lock_timeout of the caller's session is restored afterwards, not left at 300ms.
                try (ResultSet rs = s.executeQuery("SHOW lock_timeout")) {
                    rs.next();
                    assertThat(rs.getString(1)).isEqualTo("0");
                }
            }
            holder.commit();
        }
        assertThat(text("SELECT fencing.protect_table('busy_ledger', 'legacy', '300ms')"))
                .isEqualTo("protected (added column fencing_term bigint)");
    }

    @Test
    void unprotectRemovesTriggerAndRegistrationButKeepsDataAndIsIdempotent() throws Exception {
        createLegacy("old_ledger", 100);
        text("SELECT fencing.protect_table('old_ledger', 'legacy')");
        assertThat(text("SELECT fencing.unprotect_table('old_ledger')")).isEqualTo("unprotected");
        assertThat(text("SELECT fencing.unprotect_table('old_ledger')")).isEqualTo("unchanged");
        Fixtures.sql(db, "UPDATE old_ledger SET amount = 0 WHERE id = 1"); // no longer fenced
        assertThat(count(db, "SELECT count(*) FROM old_ledger")).isEqualTo(100);
        assertThat(count(db, "SELECT count(*) FROM fencing.protected_table WHERE tbl = 'old_ledger'::regclass"))
                .isZero();
    }

    @Test
    void protectRefusesViewsFencingTablesAndConflictingRegistrations() throws Exception {
        createLegacy("shared_ledger", 10);
        Fixtures.sql(db, "CREATE VIEW shared_view AS SELECT * FROM shared_ledger");
        text("SELECT fencing.protect_table('shared_ledger', 'legacy')");
        try (Connection c = Fixtures.connect(db);
                Statement s = c.createStatement()) {
            assertThatThrownBy(() -> s.execute("SELECT fencing.protect_table('shared_ledger', 'other')"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL006"));
            assertThatThrownBy(() -> s.execute("SELECT fencing.protect_table('shared_view', 'legacy')"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL006"));
            assertThatThrownBy(() -> s.execute("SELECT fencing.protect_table('fencing.high_water_mark', 'legacy')"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL006"));
            assertThatThrownBy(() -> s.execute("SELECT fencing.protect_table('shared_ledger', 'legacy', '1 hour; x')"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL003"));
        }
    }
}
