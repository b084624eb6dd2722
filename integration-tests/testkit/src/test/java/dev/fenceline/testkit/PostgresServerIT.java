package dev.fenceline.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.testkit.junit.PostgresExtension;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(PostgresExtension.class)
class PostgresServerIT {

    @Test
    void freshDatabaseAnswersSelectOneOnLoopback(TestDatabase db) throws Exception {
        assertThat(db.jdbcUrl()).startsWith("jdbc:postgresql://127.0.0.1:");
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("select 1, current_database(), inet_server_addr()::text")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getInt(1)).isEqualTo(1);
            assertThat(rs.getString(2)).isEqualTo(db.name());
            assertThat(rs.getString(3)).startsWith("127.0.0.1");
        }
    }

    @Test
    void closedDatabaseIsDropped(PostgresServer server) throws Exception {
        TestDatabase extra = server.createDatabase("dropme");
        try (Connection c = extra.dataSource().getConnection()) {
            assertThat(c.isValid(2)).isTrue();
        }
        extra.close();
        try (Connection c = server.superuserConnection("postgres");
                Statement s = c.createStatement();
                ResultSet rs =
                        s.executeQuery("select count(*) from pg_database where datname = '" + extra.name() + "'")) {
            rs.next();
            assertThat(rs.getInt(1)).isZero();
        }
    }

    @Test
    void portInUseFailsWithAClearMessage() throws Exception {
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            int port = taken.getLocalPort();
            assertThatThrownBy(() -> PostgresServer.start(
                            PostgresServer.Options.defaults().backend("local").port(port)))
                    .isInstanceOf(InfrastructureException.class)
                    .hasMessageContaining("port " + port)
                    .hasMessageContaining("already in use");
        }
    }

    @Test
    void missingBinariesWithoutZonkyFailWithAClearMessage() {
        String oldDir = System.getProperty("fenceline.pg.bindir");
        String oldZonky = System.getProperty("fenceline.zonky");
        System.setProperty("fenceline.pg.bindir", "/nonexistent/postgres/bin");
        System.setProperty("fenceline.zonky", "false");
        try {
            assertThatThrownBy(() -> PostgresServer.start(
                            PostgresServer.Options.defaults().backend("auto")))
                    .isInstanceOf(InfrastructureException.class)
                    .hasMessageContaining("No PostgreSQL available")
                    .hasMessageContaining("/nonexistent/postgres/bin")
                    .hasMessageContaining("postgresql-15");
        } finally {
            restore("fenceline.pg.bindir", oldDir);
            restore("fenceline.zonky", oldZonky);
        }
    }

    static void restore(String key, String value) {
        if (value == null) {
            System.clearProperty(key);
        } else {
            System.setProperty(key, value);
        }
    }
}
