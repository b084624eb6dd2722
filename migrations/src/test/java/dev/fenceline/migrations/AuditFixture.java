package dev.fenceline.migrations;

import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.Processes;
import dev.fenceline.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A migrated database on a server that asks for passwords (scram-sha-256 over TCP and on the socket, trust only for
 * the superuser on the socket), with a table protected for resource {@code ledger} at term 5 and an application
 * login role {@link #APP} (member of fencing_app) that writes it.
 */
final class AuditFixture implements AutoCloseable {
    static final String APP = "audit_app";
    static final String APP_PASSWORD = "app-password-0123456789";
    static final String RESOURCE = "ledger";
    static final String TABLE = "public.payment";

    final PostgresServer server;
    final TestDatabase db;
    /** The role that ran the migrations and owns schema fencing. */
    final String owner;

    final String ownerPassword;

    private AuditFixture(PostgresServer server, TestDatabase db, String owner, String ownerPassword) {
        this.server = server;
        this.db = db;
        this.owner = owner;
        this.ownerPassword = ownerPassword;
    }

    static PostgresServer startPasswordServer(int maxConnections) {
        return PostgresServer.start(
                PostgresServer.Options.defaults().passwordAuth(true).maxConnections(maxConnections));
    }

    /** The audit writer's password where a test sets it (every database of a cluster gets the same one). */
    static final String AUDIT_WRITER_PASSWORD = "audit-writer-password-0123456789";

    /**
     * Migrated by the superuser (a self-managed server). The first database migrated in a cluster sets the audit
     * writer up by itself; {@code configureWriter} sets it up explicitly (needed for later databases).
     */
    static AuditFixture superuserOwned(PostgresServer server, String name, boolean configureWriter)
            throws SQLException {
        TestDatabase db = server.createDatabase(name);
        FencingMigrations.migrate(db.dataSource());
        AuditFixture f = new AuditFixture(server, db, server.superuser(), server.superuserPassword());
        if (configureWriter) {
            try (Connection c = f.asOwner();
                    Statement s = c.createStatement()) {
                s.execute("SELECT fencing.configure_audit_writer('" + AUDIT_WRITER_PASSWORD + "')");
            }
        }
        f.protectAndEnter();
        return f;
    }

    /**
     * Migrated by an ordinary role with CREATEROLE, as on managed PostgreSQL (RDS, Cloud SQL, Azure), where the
     * administrator (here the superuser, there the provider's admin role) installs dblink afterwards.
     */
    static AuditFixture managed(PostgresServer server, String name, String owner, String ownerPassword)
            throws SQLException {
        server.createLoginRole(owner, ownerPassword, "pg_signal_backend");
        TestDatabase db = server.createDatabase(name);
        try (Connection c = server.superuserConnection(db.name());
                Statement s = c.createStatement()) {
            s.execute("ALTER ROLE " + owner + " NOSUPERUSER CREATEROLE");
            s.execute("GRANT CREATE ON DATABASE " + db.name() + " TO " + owner);
            s.execute("GRANT CREATE ON SCHEMA public TO " + owner); // PostgreSQL 15: not granted to PUBLIC
        }
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(db.jdbcUrl());
        ds.setUser(owner);
        ds.setPassword(ownerPassword);
        FencingMigrations.migrate(ds);
        try (Connection c = server.superuserConnection(db.name());
                Statement s = c.createStatement()) {
            s.execute("CREATE EXTENSION IF NOT EXISTS dblink WITH SCHEMA fencing");
            s.execute("REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA fencing FROM PUBLIC");
            s.execute("GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA fencing TO " + owner);
            s.execute("GRANT USAGE ON FOREIGN DATA WRAPPER dblink_fdw TO " + owner);
        }
        AuditFixture f = new AuditFixture(server, db, owner, ownerPassword);
        f.protectAndEnter();
        return f;
    }

    private void protectAndEnter() throws SQLException {
        server.createLoginRole(APP, APP_PASSWORD, "fencing_app");
        try (Connection c = asOwner();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE public.payment (id bigint PRIMARY KEY, amount bigint NOT NULL)");
            s.execute("SELECT fencing.protect_table('public.payment', '" + RESOURCE + "')");
            s.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON public.payment TO fencing_app");
            s.execute("SELECT fencing.enter('" + RESOURCE + "', 5, 'leader-5')");
        }
    }

    Connection asOwner() throws SQLException {
        return DriverManager.getConnection(db.jdbcUrl(), owner, ownerPassword);
    }

    Connection asSuperuser() throws SQLException {
        return server.superuserConnection(db.name());
    }

    /** The application role over TCP with its password, with an application name the audit must record. */
    Connection asApp(String applicationName) throws SQLException {
        return as(APP, APP_PASSWORD, applicationName);
    }

    Connection as(String user, String password, String applicationName) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", user);
        p.setProperty("password", password);
        p.setProperty("ApplicationName", applicationName);
        return DriverManager.getConnection(db.jdbcUrl(), p);
    }

    /** Runs SQL through psql on the local socket as the application role (password from PGPASSWORD). */
    Processes.Result psqlOnSocket(String sql, String applicationName) {
        return Processes.run(
                List.of(
                        server.binDir().resolve("psql").toString(),
                        "-X",
                        "-v",
                        "ON_ERROR_STOP=1",
                        "-h",
                        server.socketDirectory().toString(),
                        "-p",
                        Integer.toString(server.port()),
                        "-U",
                        APP,
                        "-d",
                        db.name(),
                        "-c",
                        sql),
                Duration.ofSeconds(30),
                null,
                Map.of("PGPASSWORD", APP_PASSWORD, "PGAPPNAME", applicationName, "PGCONNECT_TIMEOUT", "10"));
    }

    long count(String sql) throws SQLException {
        String v = text(sql);
        return v == null ? 0 : Long.parseLong(v);
    }

    String text(String sql) throws SQLException {
        try (Connection c = asSuperuser();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    static String text(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    @Override
    public void close() {
        db.close();
    }
}
