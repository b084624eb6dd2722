package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.execute;
import static dev.fenceline.fencing.AdversaryRole.inTransaction;
import static dev.fenceline.fencing.AdversaryRole.sqlState;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The settlement shape: one service creates payments, the leader settles them. {@code protect_table} with
 * {@code ARRAY['UPDATE', 'DELETE']} fences what the leader owns and leaves INSERT to other writers; TRUNCATE stays
 * fenced, and partitions created later get their parent's operations. Each test uses its own table and resource.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ProtectedOperationsIT {
    private TestDatabase db;
    private AdversaryRole creator;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        creator = AdversaryRole.create(db);
    }

    @AfterAll
    void dropRole() {
        creator.close();
    }

    /** A payment table protected for {@code resource} (mark 4, leader-4) fencing only UPDATE and DELETE. */
    private void settlementTable(String table, String resource) {
        Fixtures.sql(
                db,
                "CREATE TABLE " + table + " (id bigint PRIMARY KEY, status text NOT NULL)",
                "SELECT fencing.protect_table('" + table + "', '" + resource + "', '2s', ARRAY['UPDATE', 'DELETE'])",
                "SELECT fencing.enter('" + resource + "', 4, 'leader-4')");
        creator.grantWrites(table);
    }

    private long rejections(String resource) {
        return count(db, "SELECT count(*) FROM fencing.rejected_write WHERE resource = '" + resource + "'");
    }

    @Test
    void anotherServiceInsertsWithoutATermWhileUpdatesAndDeletesStayFenced() throws Exception {
        settlementTable("ops_payment", "ops-pay");
        try (Connection c = creator.connect("payment-creator")) {
            execute(c, "INSERT INTO ops_payment (id, status) VALUES (1, 'new'), (2, 'new')");
            assertThat(sqlState(
                            catchThrowable(() -> execute(c, "UPDATE ops_payment SET status = 'settled' WHERE id = 1"))))
                    .isEqualTo("FL002");
            assertThat(sqlState(catchThrowable(() -> execute(c, "DELETE FROM ops_payment WHERE id = 2"))))
                    .isEqualTo("FL002");
            assertThat(sqlState(catchThrowable(() -> execute(c, "TRUNCATE ops_payment"))))
                    .isEqualTo("FL002");
            assertThat(sqlState(catchThrowable(() -> execute(
                            c,
                            "INSERT INTO ops_payment (id, status) VALUES (1, 'x')"
                                    + " ON CONFLICT (id) DO UPDATE SET status = 'settled'"))))
                    .as("an upsert updates")
                    .isEqualTo("FL002");
            assertThat(sqlState(catchThrowable(() -> inTransaction(
                            c,
                            "SET LOCAL fencing.term = '3'",
                            "UPDATE ops_payment SET status = 'settled' WHERE id = 1"))))
                    .isEqualTo("FL001");
        }
        assertThat(count(db, "SELECT count(*) FROM ops_payment WHERE status = 'new'"))
                .isEqualTo(2);
        assertThat(rejections("ops-pay"))
                .as("one audit row per rejected statement")
                .isEqualTo(5);
        assertThat(Fixtures.text(
                        db,
                        "SELECT string_agg(operation, ',' ORDER BY id) FROM fencing.rejected_write"
                                + " WHERE resource = 'ops-pay'"))
                .isEqualTo("UPDATE,DELETE,TRUNCATE,UPDATE,UPDATE");
    }

    @Test
    void theLeaderSettlesThroughTheWriterAtItsTerm() {
        settlementTable("ops_settle", "ops-settle");
        Fixtures.sql(db, "INSERT INTO ops_settle (id, status) VALUES (1, 'new')");
        try (HikariDataSource pool = Fixtures.pool(db, 2, "ops-leader")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            writer.transaction(
                    FencingToken.of("ops-settle", 4, "leader-4"),
                    ctx -> ctx.dsl().execute("UPDATE ops_settle SET status = 'settled' WHERE id = 1"));
            Throwable stale = catchThrowable(() -> writer.transaction(
                    FencingToken.of("ops-settle", 3, "leader-3"),
                    ctx -> ctx.dsl().execute("UPDATE ops_settle SET status = 'again' WHERE id = 1")));
            assertThat(stale).isInstanceOf(StaleTermException.class);
        }
        assertThat(Fixtures.text(db, "SELECT status FROM ops_settle WHERE id = 1"))
                .isEqualTo("settled");
        assertThat(rejections("ops-settle")).isEqualTo(1);
    }

    @Test
    void theLeadersInsertOnATableThatLeavesInsertFreeIsFencedAtItsTerm() {
        settlementTable("ops_described", "ops-described");
        try (HikariDataSource pool = Fixtures.pool(db, 2, "ops-describing")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            writer.transaction(
                    FencingToken.of("ops-described", 4, "leader-4"),
                    WriteDescription.of("ops_described", "INSERT"),
                    ctx -> ctx.dsl().execute("INSERT INTO ops_described (id, status) VALUES (9, 'new')"));
            Throwable stale = catchThrowable(() -> writer.transaction(
                    FencingToken.of("ops-described", 3, "leader-3"),
                    WriteDescription.of("ops_described", "INSERT"),
                    ctx -> ctx.dsl().execute("INSERT INTO ops_described (id, status) VALUES (10, 'new')")));
            assertThat(stale).isInstanceOf(StaleTermException.class);
        }
        assertThat(count(db, "SELECT count(*) FROM ops_described WHERE id = 9")).isOne();
        assertThat(count(db, "SELECT count(*) FROM ops_described WHERE id = 10"))
                .isZero();
        assertThat(rejections("ops-described")).isOne();
    }

    /**
     * The operations a table leaves free are free only to a transaction that carries no term for the resource: a
     * deposed leader's transaction carries its term, and its INSERT, upsert or insert-only MERGE is rejected and
     * audited like its UPDATE would be. A term scoped to another resource is no term for this one.
     */
    @Test
    void aTransactionCarryingAStaleTermIsRejectedAndAuditedOnAnOperationTheTableLeavesFree() throws Exception {
        settlementTable("ops_free", "ops-free");
        try (Connection c = creator.connect("deposed-leader")) {
            for (String insert : new String[] {
                "INSERT INTO ops_free (id, status) VALUES (1, 'stale')",
                "INSERT INTO ops_free (id, status) VALUES (1, 'stale') ON CONFLICT DO NOTHING",
                "MERGE INTO ops_free f USING (VALUES (1)) v(id) ON f.id = v.id"
                        + " WHEN NOT MATCHED THEN INSERT (id, status) VALUES (v.id, 'stale')"
            }) {
                assertThat(sqlState(catchThrowable(() -> inTransaction(c, "SET LOCAL fencing.term = '3'", insert))))
                        .as(insert)
                        .isEqualTo("FL001");
            }
            inTransaction(
                    c,
                    "SET LOCAL fencing.term = '3'",
                    "SET LOCAL fencing.resource = 'another-resource'",
                    "INSERT INTO ops_free (id, status) VALUES (2, 'created by another service')");
        }
        assertThat(count(db, "SELECT count(*) FROM ops_free WHERE status = 'stale'"))
                .isZero();
        assertThat(count(db, "SELECT count(*) FROM ops_free WHERE id = 2")).isOne();
        assertThat(count(
                        db,
                        "SELECT count(*) FROM fencing.rejected_write WHERE resource = 'ops-free' AND reason = 'stale_term'"
                                + " AND offered_term = 3 AND operation = 'INSERT'"))
                .isEqualTo(3);
    }

    /**
     * A table protected on its own with fewer operations and then attached as a partition fences its parent's
     * operations from then on, and is recorded as the parent's child.
     */
    @Test
    void aTableProtectedWithFewerOperationsThenAttachedAsAPartitionFencesItsParentsOperations() throws Exception {
        Fixtures.sql(
                db,
                "CREATE TABLE ops_attach (id bigint NOT NULL, region int NOT NULL, status text) PARTITION BY LIST (region)",
                "SELECT fencing.protect_table('ops_attach', 'ops-attach')",
                "SELECT fencing.enter('ops-attach', 4, 'leader-4')",
                "CREATE TABLE ops_attach_2 (id bigint NOT NULL, region int NOT NULL, status text)",
                "SELECT fencing.protect_table('ops_attach_2', 'ops-attach', '2s', ARRAY['UPDATE'])",
                "ALTER TABLE ops_attach ATTACH PARTITION ops_attach_2 FOR VALUES IN (2)");
        creator.grantWrites("ops_attach", "ops_attach_2");
        assertThat(Fixtures.text(
                        db,
                        "SELECT operations::text || ' ' || coalesce(parent::text, 'none') FROM fencing.protected_operations"
                                + " WHERE tbl = 'ops_attach_2'::regclass"))
                .isEqualTo("{INSERT,UPDATE,DELETE,TRUNCATE} ops_attach");
        assertThat(count(db, "SELECT count(*) FROM fencing.unprotected_children"))
                .isZero();
        try (Connection c = creator.connect("attached-writer")) {
            assertThat(sqlState(catchThrowable(
                            () -> execute(c, "INSERT INTO ops_attach_2 (id, region, status) VALUES (1, 2, 'new')"))))
                    .isEqualTo("FL002");
        }
    }

    /** A partition moved from a parent that leaves INSERT free to one that fences it fences INSERT from then on. */
    @Test
    void aPartitionMovedToAParentThatFencesMoreFencesWhatItsNewParentFences() throws Exception {
        Fixtures.sql(
                db,
                "CREATE TABLE ops_from (id bigint NOT NULL, status text) PARTITION BY RANGE (id)",
                "CREATE TABLE ops_to (id bigint NOT NULL, status text) PARTITION BY RANGE (id)",
                "SELECT fencing.protect_table('ops_from', 'ops-move', '2s', ARRAY['UPDATE', 'DELETE'])",
                "SELECT fencing.protect_table('ops_to', 'ops-move')",
                "CREATE TABLE ops_moved PARTITION OF ops_from FOR VALUES FROM (1) TO (100)",
                "ALTER TABLE ops_from DETACH PARTITION ops_moved",
                "ALTER TABLE ops_to ATTACH PARTITION ops_moved FOR VALUES FROM (1) TO (100)");
        assertThat(Fixtures.text(
                        db,
                        "SELECT operations::text || ' ' || coalesce(parent::text, 'none') FROM fencing.protected_operations"
                                + " WHERE tbl = 'ops_moved'::regclass"))
                .isEqualTo("{INSERT,UPDATE,DELETE,TRUNCATE} ops_to");
        assertThat(count(db, "SELECT count(*) FROM fencing.unprotected_children"))
                .isZero();
    }

    /** {@code CREATE SCHEMA ... CREATE TABLE ... PARTITION OF} is one command whose tag is CREATE SCHEMA. */
    @Test
    void aPartitionCreatedInsideCreateSchemaIsProtected() throws Exception {
        Fixtures.sql(
                db,
                "CREATE TABLE ops_schema (id bigint NOT NULL, region int NOT NULL) PARTITION BY LIST (region)",
                "SELECT fencing.protect_table('ops_schema', 'ops-schema')",
                "CREATE SCHEMA ops_inner CREATE TABLE ops_schema_1 PARTITION OF public.ops_schema FOR VALUES IN (1)");
        assertThat(Fixtures.text(
                        db,
                        "SELECT operations::text FROM fencing.protected_operations"
                                + " WHERE tbl = 'ops_inner.ops_schema_1'::regclass"))
                .isEqualTo("{INSERT,UPDATE,DELETE,TRUNCATE}");
        assertThat(count(db, "SELECT count(*) FROM fencing.unprotected_children"))
                .isZero();
    }

    @Test
    void aPartitionCreatedLaterFencesTheOperationsOfItsParent() throws Exception {
        Fixtures.sql(
                db,
                "CREATE TABLE ops_part (id bigint NOT NULL, region int NOT NULL, status text) PARTITION BY LIST (region)",
                "SELECT fencing.protect_table('ops_part', 'ops-part', '2s', ARRAY['UPDATE'])",
                "SELECT fencing.enter('ops-part', 4, 'leader-4')",
                "CREATE TABLE ops_part_1 PARTITION OF ops_part FOR VALUES IN (1)");
        creator.grantWrites("ops_part", "ops_part_1");
        assertThat(Fixtures.text(
                        db,
                        "SELECT operations::text FROM fencing.protected_operations WHERE tbl = 'ops_part_1'::regclass"))
                .isEqualTo("{UPDATE,TRUNCATE}");
        try (Connection c = creator.connect("partition-writer")) {
            execute(c, "INSERT INTO ops_part_1 (id, region, status) VALUES (1, 1, 'new')");
            execute(c, "DELETE FROM ops_part_1 WHERE id = 1");
            execute(c, "INSERT INTO ops_part_1 (id, region, status) VALUES (2, 1, 'new')");
            assertThat(sqlState(catchThrowable(() -> execute(c, "UPDATE ops_part_1 SET status = 'settled'"))))
                    .isEqualTo("FL002");
        }
        assertThat(count(db, "SELECT count(*) FROM ops_part WHERE status = 'new'"))
                .isEqualTo(1);
    }

    @Test
    void protectingAgainWithTheDefaultFencesInsertAgain() throws Exception {
        settlementTable("ops_again", "ops-again");
        assertThat(Fixtures.text(db, "SELECT fencing.protect_table('ops_again', 'ops-again')"))
                .isEqualTo("protected");
        assertThat(Fixtures.text(db, "SELECT array_to_string(fencing.fenced_operations('ops_again'), ',')"))
                .isEqualTo("INSERT,UPDATE,DELETE,TRUNCATE");
        try (Connection c = creator.connect("insert-again")) {
            assertThat(sqlState(
                            catchThrowable(() -> execute(c, "INSERT INTO ops_again (id, status) VALUES (1, 'new')"))))
                    .isEqualTo("FL002");
        }
    }

    @Test
    void operationsThatAreNotInsertUpdateDeleteOrTruncateAreRefusedWithFL003AndChangeNothing() {
        settlementTable("ops_bad", "ops-bad");
        for (String bad :
                new String[] {"ARRAY['UPSERT']", "ARRAY[]::text[]", "ARRAY[NULL]::text[]", "ARRAY['UPDATE', '']"}) {
            Throwable t = catchThrowable(
                    () -> Fixtures.sql(db, "SELECT fencing.protect_table('ops_bad', 'ops-bad', '2s', " + bad + ")"));
            assertThat(sqlState(t)).as(bad).isEqualTo("FL003");
            assertThat(t)
                    .hasMessageContaining("operations must be a non-empty list of INSERT, UPDATE, DELETE, TRUNCATE");
        }
        assertThat(Fixtures.text(db, "SELECT array_to_string(fencing.fenced_operations('ops_bad'), ',')"))
                .isEqualTo("UPDATE,DELETE,TRUNCATE");
    }
}
