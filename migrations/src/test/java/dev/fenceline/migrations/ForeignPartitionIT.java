package dev.fenceline.migrations;

import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A statement trigger on a parent does not fire for a write straight into one of its children, so every partition and
 * inheritance child of a protected table must carry the guard itself. A foreign table can be a partition or an
 * inheritance child too ({@code CREATE FOREIGN TABLE ... PARTITION OF}, {@code ... INHERITS}, {@code ALTER TABLE ...
 * ATTACH PARTITION}): it is either refused (FL006, the protect functions' refusal) or protected (the
 * {@code fencing_guard} trigger on it, listed in {@code fencing.protected_table} for the parent's resource, and a
 * write straight into it without a term rejected, FL002). Whatever the outcome, the database's other DDL goes on.
 *
 * <p>As the superuser (who owns the tables and may create foreign servers). postgres_fdw points back at this database,
 * so a write that passes really lands in a table here; where postgres_fdw is not installed, a wrapper without a
 * handler stands in (the write check is then skipped).
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ForeignPartitionIT {
    private static final AtomicInteger NUMBERS = new AtomicInteger();

    private TestDatabase db;
    private boolean postgresFdw;

    @BeforeAll
    void setUp(TestDatabase db) throws SQLException {
        this.db = db;
        FencingMigrations.migrate(db.dataSource());
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            s.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT TRUNCATE ON TABLES TO PUBLIC");
            try {
                s.execute("CREATE EXTENSION IF NOT EXISTS postgres_fdw");
                s.execute("CREATE SERVER fp_loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '"
                        + db.server().host() + "', port '" + db.server().port() + "', dbname '" + db.name() + "')");
                s.execute("CREATE USER MAPPING FOR CURRENT_USER SERVER fp_loop OPTIONS (user '" + db.user() + "'"
                        + (db.password() == null ? "" : ", password '" + db.password() + "'") + ")");
                postgresFdw = true;
            } catch (SQLException e) {
                // no postgres_fdw on this server: a wrapper without a handler (foreign tables exist, cannot be read)
                s.execute("CREATE FOREIGN DATA WRAPPER fp_nohandler");
                s.execute("CREATE SERVER fp_loop FOREIGN DATA WRAPPER fp_nohandler");
            }
        }
    }

    private Connection connect() throws SQLException {
        return DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password());
    }

    private static String text(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    /** The column list of {@code table} (name, type, NOT NULL; in order), for a foreign table that can be attached to it. */
    private static String columnsOf(Statement s, String table) throws SQLException {
        List<String> columns = new ArrayList<>();
        try (ResultSet rs = s.executeQuery("SELECT quote_ident(attname) || ' ' || format_type(atttypid, atttypmod)"
                + " || CASE WHEN attnotnull THEN ' NOT NULL' ELSE '' END"
                + " FROM pg_attribute WHERE attrelid = '" + table + "'::regclass AND attnum > 0 AND NOT attisdropped"
                + " ORDER BY attnum")) {
            while (rs.next()) {
                columns.add(rs.getString(1));
            }
        }
        return String.join(", ", columns);
    }

    /**
     * The outcome of the DDL that made {@code child} a child of a protected table: refused with FL006 (and {@code child}
     * is then no child), or {@code child} is protected for {@code resource} and a termless write into it is rejected.
     */
    private void assertRefusedOrProtected(
            SoftAssertions softly,
            Statement s,
            SQLException ddl,
            String ddlText,
            String child,
            String parent,
            String resource,
            String remote)
            throws SQLException {
        if (ddl != null) {
            softly.assertThat(ddl.getSQLState())
                    .as("%s was refused: %s", ddlText, ddl.getMessage())
                    .isEqualTo("FL006");
            softly.assertThat(text(
                            s,
                            "SELECT count(*) FROM pg_inherits WHERE inhparent = '" + parent + "'::regclass"
                                    + " AND inhrelid = to_regclass('" + child + "')"))
                    .as("refused: %s is no child of %s", child, parent)
                    .isEqualTo("0");
            return;
        }
        softly.assertThat(text(
                        s,
                        "SELECT count(*) FROM pg_trigger WHERE tgrelid = '" + child + "'::regclass"
                                + " AND tgname = 'fencing_guard' AND NOT tgisinternal AND tgenabled <> 'D'"))
                .as("%s (after %s) carries the enabled fencing_guard trigger", child, ddlText)
                .isEqualTo("1");
        softly.assertThat(text(s, "SELECT resource FROM fencing.protected_table WHERE tbl = '" + child + "'::regclass"))
                .as("%s (after %s) is listed in fencing.protected_table", child, ddlText)
                .isEqualTo(resource);
        // No TRUNCATE trigger exists for a foreign table: nobody but its owner may truncate it (the default privileges
        // set up above granted TRUNCATE to PUBLIC on every new table).
        softly.assertThat(text(
                        s,
                        "SELECT count(*) FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a WHERE c.oid = '"
                                + child + "'::regclass AND a.privilege_type = 'TRUNCATE' AND a.grantee <> c.relowner"))
                .as("roles other than its owner that may TRUNCATE %s (after %s)", child, ddlText)
                .isEqualTo("0");
        if (postgresFdw) {
            String state = null;
            try {
                s.execute("INSERT INTO " + child + " (id, note) VALUES (150, 'written without a term')");
            } catch (SQLException e) {
                state = e.getSQLState();
            }
            softly.assertThat(state)
                    .as("a write straight into %s without a term", child)
                    .isEqualTo("FL002");
            softly.assertThat(text(s, "SELECT count(*) FROM " + remote))
                    .as("rows that reached the foreign table's far end, %s", remote)
                    .isEqualTo("0");
        }
    }

    /** Whatever became of the foreign child, ordinary DDL elsewhere in the database still works. */
    private static void assertOtherDdlStillWorks(SoftAssertions softly, Statement s) {
        String table = "fp_unrelated_" + NUMBERS.incrementAndGet();
        SQLException failed = null;
        try {
            s.execute("CREATE TABLE " + table + " (i int)");
            s.execute("ALTER TABLE " + table + " ADD COLUMN j int");
            s.execute("DROP TABLE " + table);
        } catch (SQLException e) {
            failed = e;
        }
        softly.assertThat((Throwable) failed)
                .as("CREATE TABLE / ALTER TABLE of an unrelated table afterwards")
                .isNull();
    }

    @Test
    void aForeignTableCreatedAsAPartitionOfAProtectedTableIsRefusedOrProtectedAndOtherDdlGoesOn() throws Exception {
        int n = NUMBERS.incrementAndGet();
        String parent = "fp_parent_" + n;
        String child = "fp_foreign_part_" + n;
        String remote = "fp_remote_" + n;
        String resource = "foreign-part-" + n;
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            try {
                s.execute("CREATE TABLE " + parent + " (id bigint NOT NULL, note text) PARTITION BY RANGE (id)");
                s.execute("CREATE TABLE " + parent + "_local PARTITION OF " + parent + " FOR VALUES FROM (0) TO (100)");
                s.execute("SELECT fencing.protect_table('" + parent + "', '" + resource + "')");
                s.execute("CREATE TABLE " + remote + " (LIKE " + parent + ")");
                String ddl = "CREATE FOREIGN TABLE " + child + " PARTITION OF " + parent
                        + " FOR VALUES FROM (100) TO (200) SERVER fp_loop OPTIONS (table_name '" + remote + "')";
                SQLException refused = null;
                try {
                    s.execute(ddl);
                } catch (SQLException e) {
                    refused = e;
                }
                SoftAssertions softly = new SoftAssertions();
                assertRefusedOrProtected(softly, s, refused, ddl, child, parent, resource, remote);
                assertOtherDdlStillWorks(softly, s);
                softly.assertAll();
            } finally {
                s.execute("DROP TABLE IF EXISTS " + parent + " CASCADE");
                s.execute("DROP TABLE IF EXISTS " + remote);
            }
        }
    }

    @Test
    void aForeignTableAttachedAsAPartitionOfAProtectedTableIsRefusedOrProtected() throws Exception {
        int n = NUMBERS.incrementAndGet();
        String parent = "fp_parent_" + n;
        String child = "fp_foreign_attached_" + n;
        String remote = "fp_remote_" + n;
        String resource = "foreign-attached-" + n;
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            try {
                s.execute("CREATE TABLE " + parent + " (id bigint NOT NULL, note text) PARTITION BY RANGE (id)");
                s.execute("CREATE TABLE " + parent + "_local PARTITION OF " + parent + " FOR VALUES FROM (0) TO (100)");
                s.execute("SELECT fencing.protect_table('" + parent + "', '" + resource + "')");
                s.execute("CREATE TABLE " + remote + " (LIKE " + parent + ")");
                s.execute("CREATE FOREIGN TABLE " + child + " (" + columnsOf(s, parent) + ") SERVER fp_loop"
                        + " OPTIONS (table_name '" + remote + "')");
                String ddl = "ALTER TABLE " + parent + " ATTACH PARTITION " + child + " FOR VALUES FROM (100) TO (200)";
                SQLException refused = null;
                try {
                    s.execute(ddl);
                } catch (SQLException e) {
                    refused = e;
                }
                SoftAssertions softly = new SoftAssertions();
                assertRefusedOrProtected(softly, s, refused, ddl, child, parent, resource, remote);
                assertOtherDdlStillWorks(softly, s);
                softly.assertAll();
            } finally {
                s.execute("DROP TABLE IF EXISTS " + parent + " CASCADE");
                s.execute("DROP FOREIGN TABLE IF EXISTS " + child);
                s.execute("DROP TABLE IF EXISTS " + remote);
            }
        }
    }

    @Test
    void aForeignTableCreatedAsAnInheritanceChildOfAProtectedTableIsRefusedOrProtectedAndOtherDdlGoesOn()
            throws Exception {
        int n = NUMBERS.incrementAndGet();
        String parent = "fp_parent_" + n;
        String child = "fp_foreign_child_" + n;
        String remote = "fp_remote_" + n;
        String resource = "foreign-child-" + n;
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            try {
                s.execute("CREATE TABLE " + parent + " (id bigint NOT NULL, note text)");
                s.execute("SELECT fencing.protect_table('" + parent + "', '" + resource + "')");
                s.execute("CREATE TABLE " + remote + " (LIKE " + parent + ")");
                String ddl = "CREATE FOREIGN TABLE " + child + " () INHERITS (" + parent + ") SERVER fp_loop"
                        + " OPTIONS (table_name '" + remote + "')";
                SQLException refused = null;
                try {
                    s.execute(ddl);
                } catch (SQLException e) {
                    refused = e;
                }
                SoftAssertions softly = new SoftAssertions();
                assertRefusedOrProtected(softly, s, refused, ddl, child, parent, resource, remote);
                assertOtherDdlStillWorks(softly, s);
                softly.assertAll();
            } finally {
                s.execute("DROP TABLE IF EXISTS " + parent + " CASCADE");
                s.execute("DROP TABLE IF EXISTS " + remote);
            }
        }
    }
}
