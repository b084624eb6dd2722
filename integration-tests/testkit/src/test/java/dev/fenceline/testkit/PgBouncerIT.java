package dev.fenceline.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fenceline.testkit.junit.PostgresExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A real PgBouncer 1.18 in front of a real PostgreSQL: what transaction pooling does to session state, and that
 * the handle's lifecycle (pause, resume, restart, close, killing server sessions) does what it says.
 */
@ExtendWith(PostgresExtension.class)
class PgBouncerIT {

    private static PgBouncer.Options oneServerSession() {
        return PgBouncer.Options.defaults().defaultPoolSize(1);
    }

    @Test
    void twoClientsInTransactionModeShareOneServerSessionAndItsSessionState(TestDatabase db) throws Exception {
        try (PgBouncer bouncer = PgBouncer.start(db.server(), oneServerSession());
                Connection a = bouncer.connection(db.name());
                Connection b = bouncer.connection(db.name())) {
            long pidA = backendPidInTransaction(a);
            long pidB = backendPidInTransaction(b);
            assertThat(pidB).as("server backend of client b, pool size 1").isEqualTo(pidA);

            // Why per-session state is unusable through a transaction pooler: a plain SET by one client is seen
            // by another client's next transaction on the shared server session.
            try (Statement s = a.createStatement()) {
                s.execute("SET statement_timeout = '4321ms'");
            }
            assertThat(query(b, "select current_setting('statement_timeout')")).isEqualTo("4321ms");

            List<Map<String, String>> pools = bouncer.admin("SHOW POOLS");
            assertThat(pools).anySatisfy(row -> {
                assertThat(row).containsEntry("database", db.name()).containsEntry("pool_mode", "transaction");
            });
        }
    }

    @Test
    void settingInOptionsStartupParameterIsAcceptedButDoesNotReachTheServer(TestDatabase db) throws Exception {
        String options = "&options=-c%20statement_timeout%3D1234";
        // Direct to PostgreSQL the same parameter works: the setting itself is valid.
        try (Connection direct =
                DriverManager.getConnection(db.jdbcUrl() + "?" + options.substring(1), db.user(), null)) {
            assertThat(query(direct, "select current_setting('statement_timeout')"))
                    .isEqualTo("1234ms");
        }
        try (PgBouncer bouncer = PgBouncer.start(db.server(), PgBouncer.Options.defaults());
                Connection pooled = DriverManager.getConnection(
                        bouncer.jdbcUrl(db.name()) + options, bouncer.user(), bouncer.password())) {
            assertThat(query(pooled, "select 1")).isEqualTo("1");
            // The trap: PgBouncer drops the ignored startup parameter, so the server runs with its default.
            assertThat(query(pooled, "select current_setting('statement_timeout')"))
                    .isEqualTo("0");
        }
    }

    @Test
    void transactionScopedSettingsTakeEffectInTheirTransactionOnly(TestDatabase db) throws Exception {
        try (PgBouncer bouncer = PgBouncer.start(db.server(), oneServerSession());
                Connection a = bouncer.connection(db.name());
                Connection b = bouncer.connection(db.name())) {
            a.setAutoCommit(false);
            long pidA;
            try (Statement s = a.createStatement()) {
                s.execute("SET LOCAL statement_timeout = '2345ms'");
                s.execute("select set_config('fenceline.term', '7', true)");
                assertThat(query(a, "select current_setting('statement_timeout')"))
                        .isEqualTo("2345ms");
                assertThat(query(a, "select current_setting('fenceline.term')")).isEqualTo("7");
                pidA = Long.parseLong(query(a, "select pg_backend_pid()"));
            }
            a.commit();
            assertThat(backendPidInTransaction(b))
                    .as("b runs on a's server session")
                    .isEqualTo(pidA);
            assertThat(query(b, "select current_setting('statement_timeout')")).isEqualTo("0");
            assertThat(query(b, "select current_setting('fenceline.term', true)"))
                    .isNullOrEmpty();
        }
    }

    @Test
    void closeLeavesNoProcessAndNoFolder(TestDatabase db) throws Exception {
        PgBouncer bouncer = PgBouncer.start(db.server(), PgBouncer.Options.defaults());
        long pid = bouncer.pid();
        Path folder = bouncer.folder();
        assertThat(Processes.isAlive(pid)).isTrue();
        assertThat(folder.resolve("pgbouncer.ini")).exists();
        assertThat(query(bouncer.connection(db.name()), "select 1")).isEqualTo("1");
        bouncer.close();
        assertThat(Processes.isAlive(pid))
                .as("pgbouncer pid " + pid + " after close")
                .isFalse();
        assertThat(Files.exists(folder)).as(folder + " after close").isFalse();
        assertThatThrownBy(() -> bouncer.connection(db.name())).isInstanceOf(SQLException.class);
    }

    @Test
    void frozenPoolerHoldsQueriesUntilResumed(TestDatabase db) throws Exception {
        try (PgBouncer bouncer = PgBouncer.start(db.server(), PgBouncer.Options.defaults());
                Connection c = bouncer.connection(db.name())) {
            assertThat(query(c, "select 1")).isEqualTo("1");
            bouncer.pause();
            assertThat(processState(bouncer.pid()))
                    .as("state of pid %d after pause()", bouncer.pid())
                    .isEqualTo("T");
            CompletableFuture<String> held = CompletableFuture.supplyAsync(() -> {
                try {
                    return query(c, "select 'after resume'");
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            bouncer.resume();
            assertThat(processState(bouncer.pid())).isNotEqualTo("T");
            assertThat(held.get(30, TimeUnit.SECONDS)).isEqualTo("after resume");
        }
    }

    @Test
    void restartKeepsThePortDropsOldClientsAndServesNewOnes(TestDatabase db) throws Exception {
        try (PgBouncer bouncer = PgBouncer.start(db.server(), PgBouncer.Options.defaults())) {
            int port = bouncer.port();
            long oldPid = bouncer.pid();
            Connection old = bouncer.connection(db.name());
            try {
                assertThat(query(old, "select 1")).isEqualTo("1");
                bouncer.pause(); // restart must work from the frozen state as well
                bouncer.restart();
                assertThat(Processes.isAlive(oldPid))
                        .as("old pgbouncer pid " + oldPid)
                        .isFalse();
                assertThat(bouncer.pid()).isNotEqualTo(oldPid);
                assertThat(bouncer.port()).isEqualTo(port);
                assertThatThrownBy(() -> query(old, "select 1")).isInstanceOf(SQLException.class);
            } finally {
                old.close();
            }
            try (Connection fresh = bouncer.connection(db.name())) {
                assertThat(query(fresh, "select 'after restart'")).isEqualTo("after restart");
            }
        }
    }

    @Test
    void killedServerSessionsAreReplacedWhileClientsStayConnected(TestDatabase db) throws Exception {
        try (PgBouncer bouncer = PgBouncer.start(db.server(), oneServerSession());
                Connection c = bouncer.connection(db.name())) {
            long before = backendPidInTransaction(c);
            assertThat(bouncer.killServerConnections(db.name())).isEqualTo(1);
            try (Connection direct = db.server().superuserConnection("postgres")) {
                assertThat(query(direct, "select count(*) from pg_stat_activity where pid = " + before))
                        .isEqualTo("0");
            }
            long after = backendPidInTransaction(c);
            assertThat(after).isNotEqualTo(before);
        }
    }

    @Test
    void anyServerRoleLogsInWithTrustAndPasswordsAreCheckedOtherwise(TestDatabase db) throws Exception {
        try (Connection direct = db.dataSource().getConnection();
                Statement s = direct.createStatement()) {
            s.execute("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bouncer_app') "
                    + "THEN CREATE ROLE bouncer_app LOGIN; END IF; END $$");
        }
        try (PgBouncer bouncer = PgBouncer.start(db.server(), PgBouncer.Options.defaults());
                Connection app = DriverManager.getConnection(bouncer.jdbcUrl(db.name()), "bouncer_app", null)) {
            assertThat(query(app, "select current_user")).isEqualTo("bouncer_app");
        }
        PgBouncer.Options scram =
                PgBouncer.Options.defaults().authType("scram-sha-256").password("s3cret");
        try (PgBouncer bouncer = PgBouncer.start(db.server(), scram)) {
            assertThat(bouncer.password()).isEqualTo("s3cret");
            try (Connection c = bouncer.connection(db.name())) {
                assertThat(query(c, "select current_user")).isEqualTo("postgres");
            }
            assertThatThrownBy(() -> DriverManager.getConnection(bouncer.jdbcUrl(db.name()), "postgres", "wrong"))
                    .isInstanceOf(SQLException.class)
                    .hasMessageContaining("authentication failed");
        }
    }

    @Test
    void sessionModeKeepsSessionStateWithItsClient(TestDatabase db) throws Exception {
        try (PgBouncer bouncer = PgBouncer.start(
                        db.server(), PgBouncer.Options.defaults().poolMode("session"));
                Connection a = bouncer.connection(db.name());
                Connection b = bouncer.connection(db.name())) {
            try (Statement s = a.createStatement()) {
                s.execute("SET statement_timeout = '3456ms'");
            }
            assertThat(backendPidInTransaction(b)).isNotEqualTo(backendPidInTransaction(a));
            assertThat(query(b, "select current_setting('statement_timeout')")).isEqualTo("0");
            assertThat(query(a, "select current_setting('statement_timeout')")).isEqualTo("3456ms");
        }
    }

    @Test
    void configuredBinaryThatDoesNotExistFailsInsteadOfSkipping() {
        String old = System.getProperty("fenceline.pgbouncer.bin");
        System.setProperty("fenceline.pgbouncer.bin", "/nonexistent/pgbouncer");
        try {
            assertThatThrownBy(PgBouncer::binary)
                    .isInstanceOf(InfrastructureException.class)
                    .hasMessageContaining("/nonexistent/pgbouncer")
                    .hasMessageContaining("FENCELINE_PGBOUNCER_BIN");
        } finally {
            PostgresServerIT.restore("fenceline.pgbouncer.bin", old);
        }
    }

    @Test
    void poolerOfAKilledJvmIsReapedWithItsFolder() throws Exception {
        Path report = Files.createTempFile("pgbouncer-child-", ".txt");
        String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(
                        javaBin,
                        "-cp",
                        System.getProperty("java.class.path"),
                        PgBouncerChild.class.getName(),
                        report.toString())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        try {
            await().atMost(Duration.ofSeconds(90))
                    .until(() -> Files.readString(report).contains("ready"));
            List<String> lines = Files.readAllLines(report);
            long pid = Long.parseLong(lines.get(0));
            Path folder = Path.of(lines.get(1));
            assertThat(Processes.isAlive(pid)).isTrue();
            child.destroyForcibly(); // SIGKILL: no shutdown hooks run, only the reaper is left to clean up
            await().atMost(Duration.ofSeconds(30)).until(() -> !Processes.isAlive(pid) && !Files.exists(folder));
        } finally {
            child.destroyForcibly();
            Files.deleteIfExists(report);
        }
    }

    /** A JVM that starts PostgreSQL and a pooler, reports the pooler's pid and folder, and waits to be killed. */
    public static final class PgBouncerChild {
        public static void main(String[] args) throws Exception {
            PostgresServer pg = PostgresServer.start(PostgresServer.Options.defaults());
            PgBouncer bouncer = PgBouncer.start(pg, PgBouncer.Options.defaults());
            Files.writeString(Path.of(args[0]), bouncer.pid() + "\n" + bouncer.folder() + "\nready\n");
            Thread.sleep(Duration.ofMinutes(5).toMillis());
        }
    }

    private static long backendPidInTransaction(Connection c) throws SQLException {
        boolean autoCommit = c.getAutoCommit();
        c.setAutoCommit(false);
        try {
            return Long.parseLong(query(c, "select pg_backend_pid()"));
        } finally {
            c.commit();
            c.setAutoCommit(autoCommit);
        }
    }

    private static String query(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            assertThat(rs.next()).as("a row from: " + sql).isTrue();
            return rs.getString(1);
        }
    }

    /** The one-letter state from /proc/PID/stat ("T" = stopped by a signal). */
    private static String processState(long pid) throws Exception {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        return stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    }
}
