package dev.fenceline.fencing;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.migrations.FencingMigrations;
import dev.fenceline.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/** Shared set-up for the fencing ITs: migrated database, pools, a protected payment table. */
final class Fixtures {
    static final Table<Record> PAYMENT = DSL.table(DSL.name("public", "payment"));
    static final Field<Long> ID = DSL.field(DSL.name("id"), SQLDataType.BIGINT);
    static final Field<Long> AMOUNT = DSL.field(DSL.name("amount"), SQLDataType.BIGINT);
    static final Field<String> NOTE = DSL.field(DSL.name("note"), SQLDataType.VARCHAR);

    private Fixtures() {}

    static void migrate(TestDatabase db) {
        FencingMigrations.migrate(db.dataSource());
    }

    static HikariDataSource pool(TestDatabase db, int size, String applicationName) {
        return Databases.dataSource(DatabaseConfig.builder(db.jdbcUrl())
                .username(db.user())
                .password(db.password())
                .maximumPoolSize(size)
                .applicationName(applicationName)
                .poolName(applicationName)
                .lockTimeout(Duration.ofSeconds(2))
                .idleInTransactionSessionTimeout(Duration.ofSeconds(30))
                .build());
    }

    static Connection connect(TestDatabase db) throws SQLException {
        return DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password());
    }

    static void sql(TestDatabase db, String... statements) {
        try (Connection c = connect(db);
                Statement s = c.createStatement()) {
            for (String sql : statements) {
                s.execute(sql);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Runs the statements as one transaction (superuser) carrying {@code term} for {@code resource}, set with
     * {@code SET LOCAL}: a write to a protected table needs the term in its own transaction (nothing entered outlives
     * one), and the term advances the mark when it is newer.
     */
    static void sqlAtTerm(TestDatabase db, String resource, long term, String leaderId, String... statements) {
        String[] all = new String[statements.length + 1];
        all[0] = "SELECT set_config('fencing.term', '" + term + "', true),"
                + " set_config('fencing.resource', '" + resource + "', true),"
                + " set_config('fencing.leader_id', '" + (leaderId == null ? "" : leaderId) + "', true)";
        System.arraycopy(statements, 0, all, 1, statements.length);
        try (Connection c = connect(db)) {
            AdversaryRole.inTransaction(c, all);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The first column of the first row as a number (SQL NULL: 0). */
    static long count(TestDatabase db, String sql) {
        String value = text(db, sql);
        return value == null ? 0 : Long.parseLong(value);
    }

    static String text(TestDatabase db, String sql) {
        try (Connection c = connect(db);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    static void createProtectedPaymentTable(TestDatabase db, String resource) {
        sql(
                db,
                "CREATE TABLE IF NOT EXISTS public.payment (id bigint PRIMARY KEY, amount bigint NOT NULL, note text)",
                "SELECT fencing.protect_table('public.payment', '" + resource + "')");
    }
}
