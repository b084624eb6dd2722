package dev.fenceline.fencing;

import static dev.fenceline.fencing.Fixtures.AMOUNT;
import static dev.fenceline.fencing.Fixtures.ID;
import static dev.fenceline.fencing.Fixtures.PAYMENT;
import static dev.fenceline.fencing.Fixtures.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code FencedWriterConfig.connectionRecheckAttempts}: when the work's connection is lost, the writer asks PostgreSQL
 * on fresh connections whether the term was deposed, and gives up after exactly that many lost fresh connections.
 */
@ExtendWith(PostgresExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConnectionRecheckIT {
    private TestDatabase db;

    @BeforeAll
    void setUp(TestDatabase db) {
        this.db = db;
        Fixtures.migrate(db);
        Fixtures.createProtectedPaymentTable(db, "settlement");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3})
    void afterALostConnectionTheWriterTriesConnectionRecheckAttemptsFreshConnectionsAndNoMore(int attempts) {
        DeadAfterArming dataSource = new DeadAfterArming(db);
        FencedWriter writer = FencedWriter.create(
                dataSource,
                FencedWriterConfig.builder().connectionRecheckAttempts(attempts).build());
        long t = writer.highestAccepted("settlement") + 1;
        long id = 9_400L + attempts;

        assertThatThrownBy(() -> writer.run(FencingToken.of("settlement", t), ctx -> {
                    ctx.insertInto(PAYMENT).set(ID, id).set(AMOUNT, 1L).execute();
                    dataSource.arm(); // from now on every connection handed out is already dead
                    try (Statement s = ctx.connection().createStatement()) {
                        s.execute("SELECT pg_terminate_backend(pg_backend_pid())"); // this one dies too
                    }
                }))
                .isNotInstanceOf(StaleTermException.class); // no answer from PostgreSQL: deposed is unknown

        assertThat(dataSource.handedOutDead()).isEqualTo(attempts);
        assertThat(count(db, "SELECT count(*) FROM payment WHERE id = " + id)).isZero();
    }

    /** Real PostgreSQL connections; once armed, each is terminated by the server before it is handed out. */
    private static final class DeadAfterArming implements DataSource {
        private final TestDatabase db;
        private final AtomicBoolean armed = new AtomicBoolean();
        private final AtomicInteger dead = new AtomicInteger();

        DeadAfterArming(TestDatabase db) {
            this.db = db;
        }

        void arm() {
            armed.set(true);
        }

        int handedOutDead() {
            return dead.get();
        }

        @Override
        public Connection getConnection() throws SQLException {
            Connection c = Fixtures.connect(db);
            if (!armed.get()) {
                return c;
            }
            int pid;
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                pid = rs.getInt(1);
            }
            Fixtures.sql(db, "SELECT pg_terminate_backend(" + pid + ")");
            await().atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> count(db, "SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid) == 0);
            dead.incrementAndGet();
            return c;
        }

        @Override
        public Connection getConnection(String username, String password) {
            throw new UnsupportedOperationException();
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {}

        @Override
        public void setLoginTimeout(int seconds) {}

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            throw new SQLException("not a wrapper");
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return false;
        }
    }
}
