package dev.fenceline.sample.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ConnectException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class DatabaseWaitTest {
    private final AtomicLong now = new AtomicLong();
    private final AtomicInteger attempts = new AtomicInteger();

    /** Pauses advance the fake clock instead of sleeping. */
    private DatabaseWait waitUpTo(Duration limit) {
        return new DatabaseWait(
                limit,
                "--db-wait-ms",
                Duration.ofSeconds(1),
                d -> {
                    now.addAndGet(d.toNanos());
                    return false;
                },
                now::get);
    }

    private Supplier<SampleDatabase> failing(RuntimeException e) {
        return () -> {
            attempts.incrementAndGet();
            throw e;
        };
    }

    private static SampleDatabase.UnreachableException unreachable() {
        return new SampleDatabase.UnreachableException(
                "cannot connect to PostgreSQL at jdbc:x: SQLSTATE 08001: refused",
                new SQLException("refused", "08001"));
    }

    @Test
    void anUnreachableDatabaseIsRetriedUntilTheLimitAndTheErrorNamesTheLimitAndItsValue() {
        assertThatThrownBy(() -> waitUpTo(Duration.ofSeconds(5)).open(failing(unreachable())))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("--db-wait-ms=5000")
                .hasMessageContaining("SQLSTATE 08001");
        assertThat(attempts).hasValue(6);
    }

    @Test
    void aLoginTheServerRefusesIsNotRetried() {
        IllegalStateException refused = new IllegalStateException(
                "PostgreSQL refused the connection: SQLSTATE 28P01",
                new SQLException("password authentication failed", "28P01"));
        assertThatThrownBy(() -> waitUpTo(Duration.ofMinutes(5)).open(failing(refused)))
                .isSameAs(refused);
        assertThat(attempts).hasValue(1);
    }

    @Test
    void aBugIsNotRetried() {
        NullPointerException bug = new NullPointerException("bug");
        assertThatThrownBy(() -> waitUpTo(Duration.ofMinutes(5)).open(failing(bug)))
                .isSameAs(bug);
        assertThat(attempts).hasValue(1);
    }

    @Test
    void aStopRequestedDuringTheWaitEndsItWithoutADatabase() throws InterruptedException {
        DatabaseWait wait =
                new DatabaseWait(Duration.ofMinutes(5), "--db-wait-ms", Duration.ofSeconds(1), d -> true, now::get);
        assertThat(wait.open(failing(unreachable()))).isNull();
        assertThat(attempts).hasValue(1);
    }

    @Test
    void onlyConnectionFailuresThatGoAwayByThemselvesCountAsUnreachable() {
        assertThat(SampleDatabase.isUnreachable(new RuntimeException(new SQLException("refused", "08001"))))
                .isTrue();
        assertThat(SampleDatabase.isUnreachable(
                        new RuntimeException(new SQLException("pooler without server", "08P01"))))
                .isTrue();
        assertThat(SampleDatabase.isUnreachable(new SQLException("the database system is starting up", "57P03")))
                .isTrue();
        assertThat(SampleDatabase.isUnreachable(new SQLException("not currently accepting connections", "55000")))
                .isTrue();
        assertThat(SampleDatabase.isUnreachable(new RuntimeException(new ConnectException("Connection refused"))))
                .isTrue();
        assertThat(SampleDatabase.isUnreachable(new SQLException("password authentication failed", "28P01")))
                .isFalse();
        assertThat(SampleDatabase.isUnreachable(new SQLException("role does not exist", "28000")))
                .isFalse();
        assertThat(SampleDatabase.isUnreachable(new SQLException("database does not exist", "3D000")))
                .isFalse();
        assertThat(SampleDatabase.isUnreachable(new IllegalArgumentException("bug")))
                .isFalse();
    }
}
