package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.query;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The scene of the tests where the writer's own login ({@link AdversaryRole}, an ordinary {@code fencing_app} role)
 * writes through a {@link FencedWriter}: a migrated database, pools of one session as that role, a fresh resource at
 * mark 5 (held by leader a) with its protected table per test, another leader that advances it, and the audit rows.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AdversaryWriterScene {
    /** Numbers the tables, pools and other objects a test makes, so that none is named twice. */
    static final AtomicInteger TABLES = new AtomicInteger();

    TestDatabase db;
    AdversaryRole adversary;

    @BeforeAll
    void createTheScene(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        adversary = AdversaryRole.create(db);
    }

    @AfterAll
    void dropTheRole() {
        if (adversary != null) {
            adversary.close();
        }
    }

    /** A pool of one connection logging in as the adversary role: every transaction of a writer uses one session. */
    HikariDataSource pool(String name) {
        return Databases.dataSource(DatabaseConfig.builder(db.jdbcUrl())
                .username(adversary.name())
                .maximumPoolSize(1)
                .applicationName(name)
                .poolName(name + "-" + TABLES.incrementAndGet())
                .lockTimeout(Duration.ofSeconds(2))
                .idleInTransactionSessionTimeout(Duration.ofSeconds(30))
                .build());
    }

    /** A fresh resource at mark 5 (held by leader a) and its protected table; returns the table's name. */
    String table(String prefix) {
        String table = prefix + "_" + TABLES.incrementAndGet();
        adversary.protectedTable(table, resourceOf(table), 5, "a");
        return table;
    }

    static String resourceOf(String table) {
        return table.replace('_', '-');
    }

    String note(String table, long id) {
        return Fixtures.text(db, "SELECT note FROM " + table + " WHERE id = " + id);
    }

    long audits(String resource, long offeredTerm) {
        return count(
                db,
                "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + resource + "' AND offered_term = "
                        + offeredTerm);
    }

    /** Another leader (its own connection, closed at once) advances the resource to {@code term}. */
    void advance(String resource, long term) throws SQLException {
        try (Connection b = adversary.connect("leader-b")) {
            assertThat(query(b, "SELECT fencing.enter('" + resource + "', " + term + ", 'b')"))
                    .isEqualTo(Long.toString(term));
        }
    }

    /** Runs {@code action} as leader a at term 5 of the table's resource, on a new pool of one session. */
    Throwable runAtTermFive(String table, FencedAction action) {
        try (HikariDataSource pool = pool("leader-a")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            return catchThrowable(() -> writer.run(FencingToken.of(resourceOf(table), 5, "a"), action));
        }
    }

    static void update(Connection c, String table, long id, String note, long term) throws SQLException {
        try (PreparedStatement ps =
                c.prepareStatement("UPDATE " + table + " SET note = ?, fencing_term = ? WHERE id = ?")) {
            ps.setString(1, note);
            ps.setLong(2, term);
            ps.setLong(3, id);
            ps.executeUpdate();
        }
    }
}
