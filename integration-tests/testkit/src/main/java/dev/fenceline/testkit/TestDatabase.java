package dev.fenceline.testkit;

import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/** A fresh database on a {@link PostgresServer}; {@link #close()} terminates its sessions and drops it. */
public final class TestDatabase implements AutoCloseable {
    private final PostgresServer server;
    private final String name;
    private volatile boolean closed;

    TestDatabase(PostgresServer server, String name) {
        this.server = server;
        this.name = name;
    }

    public String name() {
        return name;
    }

    public PostgresServer server() {
        return server;
    }

    public String jdbcUrl() {
        return server.jdbcUrl(name);
    }

    public String user() {
        return server.superuser();
    }

    /** The superuser's password; null where the server trusts loopback connections (the default). */
    public String password() {
        return server.superuserPassword();
    }

    /** An unpooled data source as the superuser. */
    public DataSource dataSource() {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(jdbcUrl());
        ds.setUser(user());
        if (password() != null) {
            ds.setPassword(password());
        }
        return ds;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            server.dropDatabase(name);
        }
    }

    @Override
    public String toString() {
        return jdbcUrl();
    }
}
