package dev.fenceline.fencing;

import static dev.fenceline.fencing.AdversaryRole.execute;
import static dev.fenceline.fencing.AdversaryRole.sqlState;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/**
 * A stale write inside fenced work is rejected and audited exactly once, whatever the work does with the rejection:
 * an older term offered for one statement through {@link FencedContext#connection()} and rolled back to a savepoint
 * (the rest of the transaction commits at the current term); the same rejection swallowed by work that then returns
 * (the writer does not report the transaction as committed); the loss of the connection, swallowed by work whose term
 * another leader deposed while it ran (rejected as stale). Run by an ordinary {@code fencing_app} login
 * ({@link AdversaryRole}): the writer's pools log in as that role.
 *
 * <p>Each test has its own resource and table ({@code id bigint, note text}, rows 1..3 with note {@code initial}, made
 * by {@link AdversaryRole#protectedTable}). The deposing advance is made on a separate connection of the same role, in
 * the work's own thread, so the order of events is forced without sleeping.
 */
class StaleWritesInsideTheWorkAreAuditedExactlyOnceIT extends AdversaryWriterScene {

    /**
     * The work offers an older term for one statement (SET LOCAL fencing.term through the connection) inside a
     * savepoint and rolls back to it: PostgreSQL rejects and audits that statement once; the rest of the transaction
     * commits at the current term.
     */
    @Test
    void staleStatementRolledBackToASavepointIsAuditedOnceAndTheRestCommits() {
        String table = table("savepoint");
        String resource = resourceOf(table);
        advanceQuietly(resource, 6);
        FencingToken t6 = FencingToken.of(resource, 6, "b");
        try (HikariDataSource pool = pool("leader-b")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            writer.run(t6, ctx -> {
                Connection c = ctx.connection();
                var savepoint = c.setSavepoint();
                execute(c, "SET LOCAL fencing.term = '5'");
                Throwable stale = catchThrowable(() -> update(c, table, 1, "term 5 inside a term-6 transaction", 5));
                assertThat(sqlState(stale)).isEqualTo("FL001");
                c.rollback(savepoint);
                update(c, table, 2, "term 6", 6);
            });
        }
        assertThat(note(table, 1)).isEqualTo("initial");
        assertThat(note(table, 2)).isEqualTo("term 6");
        assertThat(audits(resource, 5)).isEqualTo(1);
    }

    /**
     * As above without a savepoint, and the work swallows the rejection and returns. PostgreSQL aborted the
     * transaction, so the writer's COMMIT rolls it back (pgjdbc 42.7 reports no error for that): the term-6 write
     * is lost while the writer returns as if it had committed. One audit row either way.
     */
    @Test
    void workThatSwallowsARejectedStatementIsNotReportedAsCommitted() {
        String table = table("swallowed_stale");
        String resource = resourceOf(table);
        advanceQuietly(resource, 6);
        FencingToken t6 = FencingToken.of(resource, 6, "b");
        Throwable failed;
        try (HikariDataSource pool = pool("leader-b")) {
            FencedWriter writer = FencedWriter.create(pool, FencedWriterConfig.defaults());
            failed = catchThrowable(() -> writer.run(t6, ctx -> {
                Connection c = ctx.connection();
                update(c, table, 2, "term 6", 6);
                execute(c, "SET LOCAL fencing.term = '5'");
                Throwable swallowed =
                        catchThrowable(() -> update(c, table, 1, "term 5 inside a term-6 transaction", 5));
            }));
        }
        assertThat(note(table, 1)).isEqualTo("initial");
        assertThat(audits(resource, 5)).isEqualTo(1);
        assertThat(failed)
                .as(
                        "the writer's outcome for a transaction whose term-6 write (row 2 now: %s) was rolled"
                                + " back at COMMIT",
                        note(table, 2))
                .isNotNull();
    }

    /**
     * Another leader's advance terminates the work's session; the work swallows the resulting error and returns. The
     * connection was dead before COMMIT was sent, so nothing was committed: the transaction was rejected as deposed,
     * and is audited like one.
     */
    @Test
    void deposedWorkThatSwallowsItsConnectionLossIsRejectedAndAuditedOnce() {
        String table = table("swallowed_loss");
        String resource = resourceOf(table);
        Throwable rejected = runAtTermFive(table, ctx -> {
            Connection c = ctx.connection();
            update(c, table, 1, "term 5", 5);
            advance(resource, 6);
            Throwable lost = catchThrowable(() -> update(c, table, 2, "term 5 after 6", 5));
            assertThat(AdversaryRole.connectionLost(lost)).as("%s", lost).isTrue();
        });
        assertThat(rejected).isInstanceOf(StaleTermException.class);
        assertThat(note(table, 1)).isEqualTo("initial");
        assertThat(audits(resource, 5)).isEqualTo(1);
    }

    private void advanceQuietly(String resource, long term) {
        try {
            advance(resource, term);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
