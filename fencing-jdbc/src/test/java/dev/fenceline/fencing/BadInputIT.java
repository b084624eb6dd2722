package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.AMOUNT;
import static dev.fenceline.fencing.Fixtures.ID;
import static dev.fenceline.fencing.Fixtures.PAYMENT;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/** Bad input: a clear error and nothing written (no business row, no audit row, no mark change). */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BadInputIT {
    private TestDatabase db;
    private HikariDataSource pool;
    private FencedWriter writer;
    private final AtomicBoolean workRan = new AtomicBoolean();

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        Fixtures.createProtectedPaymentTable(db, "settlement");
        Fixtures.sql(db, "CREATE TABLE public.unfenced (id bigint PRIMARY KEY)");
        pool = Fixtures.pool(db, 2, "bad-input");
        writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
        writer.enter(FencingToken.of("settlement", 3, "leader"));
    }

    @AfterAll
    void tearDown() {
        pool.close();
    }

    @AfterEach
    void nothingWasWritten() {
        assertThat(workRan).as("the work must not run").isFalse();
        assertThat(count(db, "SELECT count(*) FROM payment")).isZero();
        assertThat(count(db, "SELECT count(*) FROM fencing.rejected_write")).isZero();
        assertThat(count(db, "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = 'settlement'"))
                .isEqualTo(3);
        assertThat(count(db, "SELECT count(*) FROM fencing.high_water_mark")).isEqualTo(1);
    }

    private FencedWork<Integer> insert() {
        return ctx -> {
            workRan.set(true);
            return ctx.insertInto(PAYMENT).set(ID, 1L).set(AMOUNT, 1L).execute();
        };
    }

    @Test
    void nullZeroAndNegativeTermsAreRejectedBeforeReachingTheDatabase() {
        assertThatThrownBy(() -> FencingToken.of("settlement", 0L, "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("term must be positive, was 0");
        assertThatThrownBy(() -> FencingToken.of("settlement", -7L, "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("term must be positive, was -7");
        assertThatThrownBy(() -> FencingToken.of("settlement", (Long) null, "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("term must be positive, was null");
        assertThatThrownBy(() -> writer.transaction(null, insert())).isInstanceOf(NullPointerException.class);
    }

    @Test
    void blankOversizedAndQuoteOrInjectionShapedResourceNamesAreRejected() {
        for (String bad : new String[] {
            null,
            "",
            "  ",
            "a".repeat(64),
            "settlement'; DROP TABLE payment; --",
            "settle\"ment",
            "-leading-dash",
            "white space",
            "émoji-☃"
        }) {
            assertThatThrownBy(() -> FencingToken.of(bad, 1, null))
                    .as("resource %s", bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("resource must be 1 to 63 characters");
        }
    }

    @Test
    void unknownResourceIsRejectedWithNothingWritten() {
        assertThatThrownBy(() -> writer.transaction(FencingToken.of("no-such-resource", 1, "x"), insert()))
                .isInstanceOfSatisfying(
                        UnknownResourceException.class,
                        e -> assertThat(e.resource()).isEqualTo("no-such-resource"))
                .hasMessageContaining("register it first");
    }

    @Test
    void tableThatIsNotProtectedForTheResourceIsRejectedUpFront() {
        assertThatThrownBy(() -> writer.transaction(
                        FencingToken.of("settlement", 3, "x"),
                        WriteDescription.of("public.unfenced", "INSERT"),
                        insert()))
                .isInstanceOf(TableNotProtectedException.class)
                .hasMessageContaining("public.unfenced is not protected");
        assertThatThrownBy(() -> writer.transaction(
                        FencingToken.of("settlement", 3, "x"),
                        WriteDescription.of("public.no_such_table", "INSERT"),
                        insert()))
                .isInstanceOf(TableNotProtectedException.class);
    }

    @Test
    void quoteAndInjectionShapedTableNamesAreRejected() {
        for (String bad : new String[] {
            "payment; DROP TABLE payment", "pay'ment", "\"payment\"", "a.b.c", "1abc", "", "payment --"
        }) {
            assertThatThrownBy(() -> WriteDescription.of(bad, "INSERT", null, null))
                    .as("table %s", bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("table must be");
        }
        assertThatThrownBy(() -> WriteDescription.of("payment", "INSERT; DROP", null, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("operation must be");
    }

    @Test
    void oversizedOrInvalidPayloadIsRejectedBeforeAnythingIsWritten() {
        String big = "{\"blob\":\"" + "x".repeat(9_000) + "\"}";
        assertThatThrownBy(() -> writer.transaction(
                        FencingToken.of("settlement", 3, "x"),
                        WriteDescription.of("public.payment", "INSERT", "k", big),
                        insert()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("payloadJson cannot be larger than maxPayloadBytes (8192 bytes), was 9011 bytes");
        assertThatThrownBy(() -> WriteDescription.of("public.payment", "INSERT", "k", "{not json"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("payloadJson is not valid JSON");
        assertThatThrownBy(() ->
                        FencedWriterConfig.builder().maxPayloadBytes(100_000).build())
                .hasMessage("maxPayloadBytes cannot be greater than 8192, was 100000");
    }

    @Test
    void sqlFunctionsRejectBadInputWithDocumentedSqlStates() throws Exception {
        try (Connection c = Fixtures.connect(db);
                Statement s = c.createStatement()) {
            assertState(s, "SELECT fencing.enter('settlement', 0)", "FL003");
            assertState(s, "SELECT fencing.enter('settlement', -1)", "FL003");
            assertState(s, "SELECT fencing.enter('settlement', NULL)", "FL003");
            assertState(s, "SELECT fencing.enter('x''; DROP TABLE payment; --', 1)", "FL003");
            assertState(s, "SELECT fencing.enter('unknown', 1)", "FL004");
            assertState(s, "SELECT fencing.register_resource('a b')", "FL003");
            assertState(s, "SELECT fencing.protect_table('payment', 'x''y')", "FL003");
            assertState(s, "SELECT fencing.protect_table('payment; drop table payment', 'settlement')", "42602");
        }
    }

    @Test
    void recordRejectionCalledFromSqlTruncatesAnOversizedPayloadWithAFlag() throws Exception {
        try (Connection c = Fixtures.connect(db);
                Statement s = c.createStatement()) {
            s.execute("BEGIN");
            s.execute("SELECT fencing.record_rejection('settlement', 1, 3, 'x', 'public.payment', 'INSERT', 'k',"
                    + " jsonb_build_object('blob', repeat('y', 10000)))");
            try (var rs = s.executeQuery(
                    "SELECT payload_truncated, (payload ->> 'original_bytes')::int" + " FROM fencing.rejected_write")) {
                rs.next();
                assertThat(rs.getBoolean(1)).isTrue();
                assertThat(rs.getInt(2)).isGreaterThan(10_000);
            }
            s.execute("ROLLBACK"); // keep the audit empty for the other checks
        }
    }

    private static void assertState(Statement s, String sql, String state) {
        assertThatThrownBy(() -> s.execute(sql))
                .as(sql)
                .isInstanceOfSatisfying(
                        SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo(state));
    }
}
