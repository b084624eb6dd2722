package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Under REPEATABLE READ a transaction's snapshot can predate an advance. Reading the mark from that snapshot would
 * let it enter at the deposed term; entering ({@code fencing.enter()}, and the guard's) therefore reads the mark
 * {@code FOR SHARE} there, which turns "the mark moved after my snapshot" into a serialization failure instead of a
 * stale write.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RepeatableReadIT {
    private TestDatabase db;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        Fixtures.createProtectedPaymentTable(db, "rr");
        Fixtures.sqlAtTerm(
                db, "rr", 1, "leader-1", "INSERT INTO payment (id, amount) SELECT g, 1 FROM generate_series(1, 3) g");
    }

    @Test
    void snapshotOlderThanTheAdvanceCannotEnterAtTheDeposedTermUnderRepeatableReadAndIsRejectedAsStale()
            throws Exception {
        try (Connection old = Fixtures.connect(db);
                Connection next = Fixtures.connect(db)) {
            old.setAutoCommit(false);
            old.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            try (Statement s = old.createStatement()) {
                s.executeQuery("SELECT count(*) FROM payment").close(); // the snapshot is taken here: mark = 1
                try (Statement n = next.createStatement()) {
                    n.execute("SELECT fencing.enter('rr', 2, 'leader-2')"); // advance, committed (autocommit)
                }
                s.execute("SET LOCAL fencing.term = '1'");
                s.execute("SET LOCAL fencing.leader_id = 'leader-1'");
                assertThatThrownBy(() -> s.execute("UPDATE payment SET amount = 100 WHERE id = 1"))
                        .isInstanceOfSatisfying(
                                SQLException.class,
                                e -> assertThat(e.getSQLState()).isEqualTo("FL001"));
            } finally {
                old.rollback();
            }
        }
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 1")).isEqualTo(1);
        assertThat(count(db, "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = 'rr'"))
                .isEqualTo(2);
    }

    @Test
    void freshRepeatableReadTransactionEntersAtTheCurrentTermAndWrites() throws Exception {
        try (Connection c = Fixtures.connect(db)) {
            c.setAutoCommit(false);
            c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            long current = count(db, "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = 'rr'");
            try (Statement s = c.createStatement()) {
                s.execute("SET LOCAL fencing.term = '" + current + "'");
                s.execute("UPDATE payment SET amount = 7 WHERE id = 2");
            }
            c.commit();
        }
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 2")).isEqualTo(7);
    }
}
