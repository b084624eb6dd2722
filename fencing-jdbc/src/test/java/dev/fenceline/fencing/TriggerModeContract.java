package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The trigger contract: writes that bypass the writer (raw JDBC, psql, other services) are fenced by the statement
 * trigger. Runs against both implementations of {@code fencing.guard()} ({@link TriggerModePlpgsqlIT},
 * {@link TriggerModeNativeIT}): the native one re-implements the fast path in C and remembers an entering per
 * subtransaction, so every boundary of that path is pinned here. Nothing entered outlives a transaction: each one
 * carries its own term ({@code SET LOCAL fencing.term}) and is entered at its first write.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class TriggerModeContract {
    private TestDatabase db;

    /** Switches {@code fencing.guard()} of the freshly migrated database; returns the expected implementation name. */
    abstract String useGuard(TestDatabase db);

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        String implementation = useGuard(db);
        assertThat(Fixtures.text(db, "SELECT fencing.guard_implementation()")).isEqualTo(implementation);
        Fixtures.createProtectedPaymentTable(db, "ledger");
        // The rows are written at the term that advanced the mark to 5, in one transaction.
        Fixtures.sqlAtTerm(
                db,
                "ledger",
                5,
                "leader-5",
                "INSERT INTO payment (id, amount) SELECT g, 1 FROM generate_series(1, 10) g");
        Fixtures.sql(
                db,
                "CREATE TABLE advance_payment (id bigint PRIMARY KEY, amount bigint NOT NULL)",
                "SELECT fencing.protect_table('advance_payment', 'ledger-advance')");
    }

    private static long backendPid(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Fence locks (advisory locks of the fence's namespace) the backend holds now. */
    private long fenceLocksOf(long pid) {
        return count(
                db,
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 1178946115::oid"
                        + " AND granted AND pid = " + pid);
    }

    private boolean backendAlive(long pid) {
        return count(db, "SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid) > 0;
    }

    private static void inTransaction(Connection c, String... statements) throws SQLException {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            for (String sql : statements) {
                s.execute(sql);
            }
            c.commit();
        } catch (SQLException e) {
            c.rollback();
            throw e;
        } finally {
            c.setAutoCommit(true);
        }
    }

    @Test
    void rawUpdateWithoutTermIsRejectedAndAuditedViaDblink() throws Exception {
        String audited = "SELECT count(*) FROM fencing.rejected_write WHERE reason = 'no_term'"
                + " AND source = 'trigger' AND resource = 'ledger' AND table_name = 'public.payment'"
                + " AND operation = 'UPDATE' AND offered_term IS NULL AND highest_accepted = 5";
        long before = count(db, audited);
        try (Connection c = Fixtures.connect(db)) {
            assertThatThrownBy(() -> inTransaction(c, "UPDATE payment SET amount = 100 WHERE id = 1"))
                    .isInstanceOfSatisfying(SQLException.class, e -> {
                        assertThat(e.getSQLState()).isEqualTo("FL002");
                        assertThat(e.getMessage()).contains("no fencing term", "ledger", "public.payment");
                    });
        }
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 1")).isEqualTo(1);
        assertThat(count(db, audited)).isEqualTo(before + 1);
    }

    @Test
    void rawUpdateWithStaleTermIsRejectedAndAuditedViaDblink() throws Exception {
        try (Connection c = Fixtures.connect(db)) {
            assertThatThrownBy(() -> inTransaction(
                            c,
                            "SET LOCAL fencing.term = '4'",
                            "SET LOCAL fencing.leader_id = 'leader-4'",
                            "UPDATE payment SET amount = 100 WHERE id = 2"))
                    .isInstanceOfSatisfying(SQLException.class, e -> {
                        assertThat(e.getSQLState()).isEqualTo("FL001");
                        assertThat(e.getMessage()).contains("stale term 4", "ledger", "highest accepted 5");
                    });
        }
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 2")).isEqualTo(1);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE reason = 'stale_term'"
                                + " AND source = 'trigger' AND offered_term = 4 AND highest_accepted = 5 AND leader_id = 'leader-4'"
                                + " AND operation = 'UPDATE' AND table_name = 'public.payment'"))
                .isEqualTo(1);
    }

    @Test
    void rawWriteWithCurrentTermIsAcceptedForItsTransactionOnly() throws Exception {
        try (Connection c = Fixtures.connect(db)) {
            inTransaction(c, "SET LOCAL fencing.term = '5'", "INSERT INTO payment (id, amount) VALUES (500, 7)");
            // Entered for that transaction only: nothing stays on the session for a later transaction (or, behind a
            // pooler, a later client of the same server session).
            assertThatThrownBy(() -> inTransaction(c, "DELETE FROM payment WHERE id = 500"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL002"));
        }
        try (Connection c = Fixtures.connect(db)) {
            inTransaction(
                    c,
                    "SET LOCAL fencing.term = '5'",
                    "INSERT INTO payment (id, amount, fencing_term) VALUES (501, 7, 5)");
        }
        assertThat(count(db, "SELECT fencing_term FROM payment WHERE id = 501")).isEqualTo(5);
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 500")).isEqualTo(1);
    }

    @Test
    void truncateWithoutTermIsRejected() throws Exception {
        try (Connection c = Fixtures.connect(db)) {
            assertThatThrownBy(() -> inTransaction(c, "TRUNCATE payment"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL002"));
        }
        assertThat(count(db, "SELECT count(*) FROM payment")).isGreaterThanOrEqualTo(10);
    }

    /** A login role (a real session user: break-glass and terms are authorised by the session user). */
    private Connection connectAs(String role, String memberOf, String tableGrant) throws SQLException {
        String name = role + "_" + db.name().replaceAll("[^a-z0-9_]", "_");
        Fixtures.sql(
                db,
                "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + name + "') THEN"
                        + " CREATE ROLE " + name + " LOGIN; END IF; END $$",
                "GRANT " + memberOf + " TO " + name,
                "GRANT " + tableGrant + " ON payment TO " + name);
        return java.sql.DriverManager.getConnection(db.jdbcUrl(), name, null);
    }

    @Test
    void breakGlassByMemberIsAllowedAndLoggedInTheSameTransaction() throws Exception {
        try (Connection c = connectAs("glass", "fencing_break_glass", "SELECT, UPDATE")) {
            inTransaction(
                    c,
                    "SET LOCAL fencing.break_glass = 'INC-42 fix amount by hand'",
                    "UPDATE payment SET amount = 42 WHERE id = 3");
        }
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 3")).isEqualTo(42);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.break_glass_log WHERE resource = 'ledger'"
                                + " AND table_name = 'public.payment' AND operation = 'UPDATE'"
                                + " AND reason = 'INC-42 fix amount by hand' AND db_user LIKE 'glass_%'"))
                .isEqualTo(1);
    }

    @Test
    void breakGlassByNonMemberIsRefusedAndAudited() throws Exception {
        try (Connection c = connectAs("outsider", "fencing_app", "SELECT, UPDATE")) {
            assertThatThrownBy(() -> inTransaction(
                            c,
                            "SET LOCAL fencing.break_glass = 'let me in'",
                            "UPDATE payment SET amount = 43 WHERE id = 4"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL007"));
        }
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 4")).isEqualTo(1);
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE reason = 'break_glass_refused'"
                                + " AND db_user LIKE 'outsider_%' AND table_name = 'public.payment'"))
                .isEqualTo(1);
    }

    @Test
    void breakGlassIsAuthorisedForTheSessionUserNotTheOwnerACascadeRunsAs() throws Exception {
        // The cascade into the protected child runs as the child's owner, who may break glass; the session may not.
        String owner = "cascade_owner_" + db.name().replaceAll("[^a-z0-9_]", "_");
        Fixtures.sql(
                db,
                "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + owner + "') THEN"
                        + " CREATE ROLE " + owner + "; END IF; END $$",
                "GRANT fencing_break_glass TO " + owner,
                "CREATE TABLE cascade_parent (id bigint PRIMARY KEY)",
                "CREATE TABLE cascade_child (id bigint PRIMARY KEY, parent bigint REFERENCES cascade_parent ON DELETE CASCADE)",
                "INSERT INTO cascade_parent VALUES (1)",
                "INSERT INTO cascade_child VALUES (1, 1)",
                "SELECT fencing.protect_table('cascade_child', 'ledger')",
                "ALTER TABLE cascade_child OWNER TO " + owner,
                "GRANT SELECT, DELETE ON cascade_parent TO fencing_app");
        try (Connection c = connectAs("cascader", "fencing_app", "SELECT")) {
            assertThatThrownBy(() -> inTransaction(
                            c,
                            "SET LOCAL fencing.break_glass = 'through the cascade'",
                            "DELETE FROM cascade_parent WHERE id = 1"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL007"));
        }
        assertThat(count(db, "SELECT count(*) FROM cascade_child")).isEqualTo(1);
        assertThat(count(db, "SELECT count(*) FROM fencing.break_glass_log WHERE table_name = 'public.cascade_child'"))
                .isZero();
    }

    @Test
    void nonNumericTermIsRejectedAsInvalid() throws Exception {
        try (Connection c = Fixtures.connect(db)) {
            assertThatThrownBy(() -> inTransaction(
                            c,
                            "SET LOCAL fencing.term = '5; DROP TABLE payment'",
                            "UPDATE payment SET amount = 2 WHERE id = 5"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL003"));
        }
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = 5 AND amount = 1"))
                .isEqualTo(1);
    }

    @Test
    void staleTermIsRejectedOnAConnectionWhosePreviousTransactionWasEnteredAtTheCurrentTerm() throws Exception {
        try (Connection c = Fixtures.connect(db)) {
            inTransaction(c, "SET LOCAL fencing.term = '5'", "UPDATE payment SET amount = 1 WHERE id = 6");
            // That entering ended with its transaction: the next one is decided by its own term alone.
            assertThatThrownBy(() -> inTransaction(
                            c, "SET LOCAL fencing.term = '4'", "UPDATE payment SET amount = 66 WHERE id = 6"))
                    .isInstanceOfSatisfying(SQLException.class, e -> {
                        assertThat(e.getSQLState()).isEqualTo("FL001");
                        assertThat(e.getMessage()).contains("stale term 4", "highest accepted 5");
                    });
        }
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 6")).isEqualTo(1);
    }

    @Test
    void termWithSurroundingSpacesIsTheSameTerm() throws Exception {
        try (Connection c = Fixtures.connect(db)) {
            inTransaction(c, "SET LOCAL fencing.term = ' 5 '", "UPDATE payment SET amount = 77 WHERE id = 7");
        }
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 7")).isEqualTo(77);
    }

    @Test
    void transactionEnteredForAnotherResourceIsNotEnteredForThisTableAndNeedsItsOwnTerm() throws Exception {
        Fixtures.sql(db, "SELECT fencing.register_resource('elsewhere')");
        try (Connection c = Fixtures.connect(db)) {
            // fencing.enter() enters this transaction for 'elsewhere' only; the write to a 'ledger' table carries no
            // term.
            assertThatThrownBy(() -> inTransaction(
                            c, "SELECT fencing.enter('elsewhere', 1)", "UPDATE payment SET amount = 88 WHERE id = 8"))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("FL002"));
            // With its own term for 'ledger' the same transaction writes.
            inTransaction(
                    c,
                    "SELECT fencing.enter('elsewhere', 1)",
                    "SET LOCAL fencing.term = '5'",
                    "UPDATE payment SET amount = 89 WHERE id = 9");
        }
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 8")).isEqualTo(1);
        assertThat(count(db, "SELECT amount FROM payment WHERE id = 9")).isEqualTo(89);
    }

    @Test
    void newerTermScopedToTheResourceAdvancesTheMarkAndTerminatesOpenTransactionsOfOlderTerms() throws Exception {
        long oldPid;
        try (Connection old = Fixtures.connect(db);
                Connection c = Fixtures.connect(db)) {
            oldPid = backendPid(old);
            inTransaction(
                    old,
                    "SET LOCAL fencing.term = '1'",
                    "SET LOCAL fencing.resource = 'ledger-advance'",
                    "INSERT INTO advance_payment VALUES (1, 1)");
            // The old leader's next transaction, entered at 1 by its write, is still open when the advance comes.
            old.setAutoCommit(false);
            try (Statement s = old.createStatement()) {
                s.execute("SET LOCAL fencing.term = '1'");
                s.execute("INSERT INTO advance_payment VALUES (4, 1)");
            }
            assertThat(fenceLocksOf(oldPid))
                    .as("fence locks of the open transaction entered at 1")
                    .isEqualTo(1);
            // Transactions at the same term share the fence lock: this one does not wait for the open one.
            inTransaction(c, "SET LOCAL fencing.term = '1'", "INSERT INTO advance_payment VALUES (2, 1)");
            inTransaction(
                    c,
                    "SET LOCAL fencing.term = '2'",
                    "SET LOCAL fencing.resource = 'ledger-advance'",
                    "INSERT INTO advance_payment VALUES (3, 2)");
            // The advance terminated the open transaction of the older term before it moved the mark: it cannot commit.
            assertThatThrownBy(old::commit).isInstanceOf(SQLException.class);
            inTransaction(c, "SET LOCAL fencing.term = '2'", "INSERT INTO advance_payment VALUES (5, 2)");
        }
        await().atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> !backendAlive(oldPid));
        assertThat(Fixtures.text(db, "SELECT string_agg(id::text, ',' ORDER BY id) FROM advance_payment"))
                .isEqualTo("1,2,3,5");
        assertThat(Fixtures.text(
                        db,
                        "SELECT highest_accepted || ':' || (SELECT string_agg(previous_term || '>' || term,"
                                + " ',' ORDER BY term) FROM fencing.term_history WHERE resource = 'ledger-advance')"
                                + " FROM fencing.high_water_mark WHERE resource = 'ledger-advance'"))
                .isEqualTo("2:0>1,1>2");
        assertThat(count(
                        db,
                        "SELECT terminated_sessions FROM fencing.term_history WHERE resource = 'ledger-advance'"
                                + " AND term = 2"))
                .as("transactions the advance to 2 terminated")
                .isEqualTo(1);
    }

    // ---- savepoints: a rolled-back savepoint takes its entering with it ------------------------------------------

    /**
     * One transaction of the leader at term 1 writes under {@code enteringSteps} (savepoints that end up rolled back,
     * taking the write and the fence lock it took with them); another transaction then advances the mark to 2; the
     * first transaction, still open and still at term 1, writes again. PostgreSQL released the fence lock with the
     * savepoint, so the advance had nobody to end, and the guard must not remember the entering either (the native
     * guard keeps it per subtransaction): the write enters again, reads mark 2 and is rejected as stale. Allowing it
     * would commit a term-1 write after term 2 committed.
     */
    private void writeAfterASavepointEnteringWasRolledBackAndANewerTermAdvanced(
            String table, String resource, String... enteringSteps) throws Exception {
        Fixtures.sql(
                db,
                "CREATE TABLE " + table + " (id bigint PRIMARY KEY, amount bigint NOT NULL)",
                "SELECT fencing.protect_table('" + table + "', '" + resource + "')",
                "SELECT fencing.enter('" + resource + "', 1, 'leader-1')");
        long oldPid;
        try (Connection old = Fixtures.connect(db);
                Connection next = Fixtures.connect(db)) {
            oldPid = backendPid(old);
            old.setAutoCommit(false);
            try (Statement s = old.createStatement()) {
                s.execute("SET LOCAL fencing.term = '1'");
                s.execute("SET LOCAL fencing.leader_id = 'leader-1'");
                for (String step : enteringSteps) {
                    s.execute(step);
                }
                assertThat(fenceLocksOf(oldPid))
                        .as("fence locks held once the savepoint that entered rolled back")
                        .isZero();

                inTransaction(
                        next,
                        "SET LOCAL fencing.term = '2'",
                        "SET LOCAL fencing.resource = '" + resource + "'",
                        "SET LOCAL fencing.leader_id = 'leader-2'",
                        "INSERT INTO " + table + " VALUES (2, 2)");

                assertThatThrownBy(() -> s.execute("INSERT INTO " + table + " VALUES (3, 1)"))
                        .as("a term-1 write after the advance to 2, in the transaction whose entering was rolled back")
                        .isInstanceOfSatisfying(SQLException.class, e -> {
                            assertThat(e.getSQLState()).isEqualTo("FL001");
                            assertThat(e.getMessage()).contains("stale term 1", "highest accepted 2");
                        });
            } finally {
                old.rollback();
                old.setAutoCommit(true);
            }
            assertThat(backendAlive(oldPid))
                    .as("the old transaction held no fence lock: nothing to terminate")
                    .isTrue();
        }
        assertThat(Fixtures.text(db, "SELECT string_agg(id::text, ',' ORDER BY id) FROM " + table))
                .isEqualTo("2");
        assertThat(Fixtures.text(
                        db,
                        "SELECT highest_accepted || ':' || (SELECT terminated_sessions FROM"
                                + " fencing.term_history WHERE resource = '" + resource + "' AND term = 2)"
                                + " FROM fencing.high_water_mark WHERE resource = '" + resource + "'"))
                .isEqualTo("2:0");
        assertThat(
                        count(
                                db,
                                "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + resource + "'"
                                        + " AND reason = 'stale_term' AND source = 'trigger' AND offered_term = 1 AND highest_accepted = 2"))
                .isEqualTo(1);
    }

    @Test
    void writeAfterARolledBackSavepointThatEnteredIsRejectedAsStaleOnceANewerTermAdvanced() throws Exception {
        writeAfterASavepointEnteringWasRolledBackAndANewerTermAdvanced(
                "savepoint_payment",
                "ledger-savepoint",
                "SAVEPOINT before_write",
                "INSERT INTO savepoint_payment VALUES (1, 1)",
                "ROLLBACK TO SAVEPOINT before_write");
    }

    @Test
    void writeAfterARolledBackOuterSavepointWhoseReleasedInnerOneEnteredIsRejectedAsStaleOnceANewerTermAdvanced()
            throws Exception {
        // The inner savepoint's release hands its fence lock (and the native guard's entering) to the outer one,
        // whose rollback releases both.
        writeAfterASavepointEnteringWasRolledBackAndANewerTermAdvanced(
                "nested_savepoint_payment",
                "ledger-nested-savepoint",
                "SAVEPOINT outer_sp",
                "SAVEPOINT inner_sp",
                "INSERT INTO nested_savepoint_payment VALUES (1, 1)",
                "RELEASE SAVEPOINT inner_sp",
                "ROLLBACK TO SAVEPOINT outer_sp");
    }

    @Test
    void writeAfterARolledBackSavepointThatEnteredEntersAgainAtTheCurrentTermAndCommits() throws Exception {
        Fixtures.sql(
                db,
                "CREATE TABLE reentry_payment (id bigint PRIMARY KEY, amount bigint NOT NULL)",
                "SELECT fencing.protect_table('reentry_payment', 'ledger-reentry')",
                "SELECT fencing.enter('ledger-reentry', 1, 'leader-1')");
        try (Connection c = Fixtures.connect(db)) {
            long pid = backendPid(c);
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("SET LOCAL fencing.term = '1'");
                s.execute("SAVEPOINT before_write");
                s.execute("INSERT INTO reentry_payment VALUES (1, 1)");
                s.execute("ROLLBACK TO SAVEPOINT before_write");
                assertThat(fenceLocksOf(pid))
                        .as("fence locks after the savepoint rolled back")
                        .isZero();
                s.execute("INSERT INTO reentry_payment VALUES (2, 1)");
                assertThat(fenceLocksOf(pid))
                        .as("fence locks once the next write entered again")
                        .isEqualTo(1);
            }
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(Fixtures.text(db, "SELECT string_agg(id::text, ',' ORDER BY id) FROM reentry_payment"))
                .isEqualTo("2");
    }
}
