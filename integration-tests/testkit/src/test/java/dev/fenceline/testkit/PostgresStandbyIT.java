package dev.fenceline.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Streaming standbys from {@link PostgresStandby}: a synchronous one keeps every acknowledged commit through a crash
 * of the primary and its own promotion, and a new standby can be built from the promoted server; an asynchronous one
 * is reported as such and, promoted, holds a prefix of what the primary acknowledged.
 */
class PostgresStandbyIT {
    private static final int ROWS = 300;

    @Test
    void synchronousStandbyHasEveryAcknowledgedCommitAfterTheCrashOfThePrimaryAndCanHaveAStandbyOfItsOwn()
            throws Exception {
        PostgresServer primary = localServer();
        PostgresServer standby = null;
        PostgresServer third = null;
        try {
            TestDatabase db = primary.createDatabase("standby");
            exec(primary, db.name(), "CREATE TABLE t (id int PRIMARY KEY)");
            standby = PostgresStandby.start(primary, "standby_a", PostgresStandby.Mode.SYNCHRONOUS);
            assertThat(standby.inRecovery()).isTrue();
            assertThat(scalar(
                            primary,
                            "postgres",
                            "SELECT sync_state FROM pg_stat_replication " + "WHERE application_name = 'standby_a'"))
                    .isEqualTo("sync");
            assertThat(scalar(primary, "postgres", "SHOW synchronous_commit")).isEqualTo("remote_apply");
            PostgresServer s1 = standby;
            assertThatThrownBy(() -> exec(s1, db.name(), "INSERT INTO t VALUES (-1)"))
                    .isInstanceOf(SQLException.class)
                    .hasMessageContaining("read-only");

            List<Integer> acknowledged = insertUntilCrash(primary, db.name(), ROWS);
            assertThat(acknowledged).hasSize(ROWS);
            primary.crash();
            assertThat(Processes.isAlive(primary.pid())).isFalse();
            standby.promote();
            assertThat(standby.inRecovery()).isFalse();
            assertThat(ids(standby, db.name())).containsAll(acknowledged);
            exec(standby, db.name(), "INSERT INTO t VALUES (100000)"); // a primary now: it takes writes

            // The promoted server does not wait for a standby it does not have; a new one can be attached.
            third = PostgresStandby.start(standby, "standby_b", PostgresStandby.Mode.SYNCHRONOUS);
            exec(standby, db.name(), "INSERT INTO t VALUES (100001)");
            // remote_apply: acknowledged means applied on the new standby, so it is visible there at once
            assertThat(ids(third, db.name())).contains(100000, 100001).containsAll(acknowledged);
        } finally {
            close(third);
            close(standby);
            primary.close();
        }
        long standbyPid = standby.pid();
        long thirdPid = third.pid();
        await("both standbys' postmasters gone")
                .atMost(Duration.ofSeconds(30))
                .until(() -> !Processes.isAlive(standbyPid) && !Processes.isAlive(thirdPid));
    }

    @Test
    void asynchronousStandbyPromotedHoldsAPrefixOfWhatThePrimaryAcknowledged() throws Exception {
        PostgresServer primary = localServer();
        PostgresServer standby = null;
        try {
            TestDatabase db = primary.createDatabase("standby");
            exec(primary, db.name(), "CREATE TABLE t (id int PRIMARY KEY)");
            standby = PostgresStandby.start(primary, "standby_async", PostgresStandby.Mode.ASYNCHRONOUS);
            assertThat(scalar(
                            primary,
                            "postgres",
                            "SELECT sync_state FROM pg_stat_replication " + "WHERE application_name = 'standby_async'"))
                    .isEqualTo("async");
            List<Integer> acknowledged = insertUntilCrash(primary, db.name(), ROWS);
            primary.crash();
            standby.promote();
            List<Integer> kept = ids(standby, db.name());
            // Commits replay in order: whatever survived is the first k acknowledged inserts, nothing else.
            assertThat(kept).isEqualTo(acknowledged.subList(0, kept.size()));
            System.out.printf(
                    "asynchronous standby: %d of %d acknowledged commits survived the failover%n",
                    kept.size(), acknowledged.size());
        } finally {
            close(standby);
            primary.close();
        }
    }

    @Test
    void badNamesAreRefusedBeforeAnythingStarts() {
        PostgresServer primary = PostgresServer.shared();
        assertThatThrownBy(() -> PostgresStandby.start(primary, "Bad-Name", PostgresStandby.Mode.SYNCHRONOUS))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("standby name")
                .hasMessageContaining("Bad-Name");
    }

    private static PostgresServer localServer() {
        Assumptions.assumeTrue(
                PostgresServer.LocalBinaries.findBinDir(new ArrayList<>()) != null,
                "standbys need the machine's PostgreSQL server binaries (pg_basebackup, pg_ctl)");
        return PostgresServer.start(PostgresServer.Options.defaults().backend("local"));
    }

    /** Inserts ids 1..n, one autocommit transaction each; returns the ids whose commit was acknowledged. */
    private static List<Integer> insertUntilCrash(PostgresServer server, String db, int n) throws SQLException {
        List<Integer> acknowledged = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(server.jdbcUrl(db), server.superuser(), null);
                Statement s = c.createStatement()) {
            for (int i = 1; i <= n; i++) {
                s.execute("INSERT INTO t VALUES (" + i + ")");
                acknowledged.add(i);
            }
        }
        return acknowledged;
    }

    private static List<Integer> ids(PostgresServer server, String db) throws SQLException {
        List<Integer> ids = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(server.jdbcUrl(db), server.superuser(), null);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT id FROM t ORDER BY id")) {
            while (rs.next()) {
                ids.add(rs.getInt(1));
            }
        }
        return ids;
    }

    private static void exec(PostgresServer server, String db, String sql) throws SQLException {
        try (Connection c = DriverManager.getConnection(server.jdbcUrl(db), server.superuser(), null);
                Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    private static String scalar(PostgresServer server, String db, String sql) throws SQLException {
        try (Connection c = DriverManager.getConnection(server.jdbcUrl(db), server.superuser(), null);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    private static void close(PostgresServer s) {
        if (s != null) {
            s.close();
        }
    }
}
