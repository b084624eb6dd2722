package dev.fenceline.faults.workload;

import dev.fenceline.faults.nemesis.TcpProxy;
import dev.fenceline.testkit.InfrastructureException;
import dev.fenceline.testkit.PgBouncer;
import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.PostgresStandby;
import dev.fenceline.testkit.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The way from the workers (and the runner) to PostgreSQL in a fault run, per {@link PostgresSetup}:
 *
 * <pre>
 *   direct:                 workers ─────────────────────────────▶ primary (the JVM's shared server)
 *   pooler:                 workers ─▶ PgBouncer ────────────────▶ primary (the JVM's shared server)
 *   standby (± pooler):     workers ─(▶ PgBouncer)─▶ TcpProxy "pg" ─▶ primary ══WAL══▶ standby
 *   runner (payments, checks): TcpProxy "pg" (or the primary directly), never the pooler
 * </pre>
 *
 * <p>Invariant: the "pg" proxy always points at the one server that takes writes. {@link #failover()} crashes the
 * primary, promotes the standby, and only then repoints the proxy (dropping every connection through it), so no
 * client ever reaches two writable servers. With a standby the primary is a server of its own (it is crashed);
 * without one the JVM's shared server is used and never crashed.
 *
 * <p>An asynchronous standby streams through a second proxy ("replication") so a failover can first hold back the
 * WAL the primary has acknowledged but not yet shipped ({@link #failover()}), as replication lag does: that is what an
 * asynchronous failover loses.
 */
public final class PostgresPath implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PostgresPath.class);

    public final PostgresSetup setup;
    private final boolean ownServers;
    private final TestDatabase database;
    private final List<PostgresServer> retired = new ArrayList<>();
    private PostgresServer primary;
    private PostgresServer standby;
    private TcpProxy pgProxy;
    private TcpProxy replicationProxy;
    private PgBouncer pooler;
    private int standbys;
    private int failovers;

    private PostgresPath(PostgresSetup setup, PostgresServer primary, boolean ownServers) {
        this.setup = setup;
        this.primary = primary;
        this.ownServers = ownServers;
        this.database = primary.createDatabase("faults");
    }

    /** The primary and the run's database; call {@link #attach()} after migrating through {@link #directJdbcUrl()}. */
    public static PostgresPath start(PostgresSetup setup) {
        if (setup.hasStandby()) {
            return new PostgresPath(
                    setup,
                    PostgresServer.start(PostgresServer.Options.defaults().backend("local")),
                    true);
        }
        return new PostgresPath(setup, PostgresServer.shared(), false);
    }

    /** The primary itself, for the schema migration before anything else is attached. */
    public String directJdbcUrl() {
        return database.jdbcUrl() + "?user=" + database.user();
    }

    /** Starts the standby, the proxy and the pooler that {@link #setup} asks for. */
    public synchronized void attach() {
        try {
            if (setup.hasStandby()) {
                pgProxy = TcpProxy.start("pg", TcpProxy.loopback(primary.port()));
                startStandby();
            }
            if (setup.pooler()) {
                PgBouncer.Options o =
                        PgBouncer.Options.defaults().poolMode("transaction").defaultPoolSize(4);
                pooler = PgBouncer.start(primary, pgProxy == null ? o : o.serverPort(pgProxy.port()));
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private void startStandby() {
        PostgresStandby.Mode mode = setup.standby() == PostgresSetup.Standby.SYNCHRONOUS
                ? PostgresStandby.Mode.SYNCHRONOUS
                : PostgresStandby.Mode.ASYNCHRONOUS;
        int replicationPort = 0;
        if (mode == PostgresStandby.Mode.ASYNCHRONOUS) {
            replicationProxy = TcpProxy.start("replication", TcpProxy.loopback(primary.port()));
            replicationPort = replicationProxy.port();
        }
        standby = PostgresStandby.start(primary, "standby_" + (++standbys), mode, replicationPort);
    }

    /** The JDBC URL the workers use: through the pooler, else the proxy, else the primary. */
    public synchronized String workerJdbcUrl() {
        if (pooler != null) {
            return pooler.jdbcUrl(database.name()) + "&user=" + database.user();
        }
        if (pgProxy != null) {
            return proxyUrl() + "?user=" + database.user();
        }
        return directJdbcUrl();
    }

    private String proxyUrl() {
        return "jdbc:postgresql://127.0.0.1:" + pgProxy.port() + "/" + database.name();
    }

    /** The JDBC URL (no user) of whichever server takes writes, not through the pooler: for other logins. */
    public synchronized String writableJdbcUrl() {
        return pgProxy != null ? proxyUrl() : database.jdbcUrl();
    }

    /** The runner's own connections (payments, marks, checks): to whichever server takes writes, not pooled. */
    public DataSource dataSource() {
        if (pgProxy == null) {
            return database.dataSource();
        }
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(proxyUrl());
        ds.setUser(database.user());
        return ds;
    }

    public synchronized PgBouncer pooler() {
        return pooler;
    }

    public synchronized boolean hasStandby() {
        return standby != null;
    }

    /** The run's database (created on the first primary; a promoted standby has it under the same name). */
    public TestDatabase database() {
        return database;
    }

    /**
     * Crashes the primary ({@code pg_ctl stop -m immediate}), promotes the standby and repoints the "pg" proxy at it.
     * With an asynchronous standby, replication is first held back for {@code asyncLagMs} (the primary keeps
     * acknowledging commits the standby never receives) and the held bytes are dropped with the primary. Afterwards
     * there is no standby until {@link #rebuildStandby()}. Returns what happened, for the report.
     */
    public synchronized String failover(long asyncLagMs) {
        if (standby == null) {
            throw new IllegalStateException("no standby to fail over to (setup: " + setup + ")");
        }
        String lag = "";
        if (replicationProxy != null && asyncLagMs > 0) {
            replicationProxy.blackhole();
            FaultEnvironment.sleep(asyncLagMs);
            lag = "replication held back " + asyncLagMs + " ms, then ";
        }
        PostgresServer old = primary;
        long crashAt = System.nanoTime();
        old.crash();
        if (replicationProxy != null) {
            // What it held back is gone with the primary: drop the connections while still blackholed (so no held
            // chunk is written on the way out), then the proxy.
            replicationProxy.resetConnections();
            replicationProxy.close();
            replicationProxy = null;
        }
        standby.promote();
        primary = standby;
        standby = null;
        retired.add(old);
        pgProxy.upstream(TcpProxy.loopback(primary.port()));
        failovers++;
        String what =
                lag + "primary 127.0.0.1:" + old.port() + " crashed (immediate), standby 127.0.0.1:" + primary.port()
                        + " promoted and reachable " + (System.nanoTime() - crashAt) / 1_000_000
                        + " ms after the crash (failover "
                        + failovers + ")";
        log.info("{}", what);
        return what;
    }

    /** A new standby of the current primary, in the configured mode (so a later failover can happen). */
    public synchronized String rebuildStandby() {
        if (standby != null) {
            return "standby already there";
        }
        startStandby();
        return "new standby 127.0.0.1:" + standby.port() + " of 127.0.0.1:" + primary.port();
    }

    /** Undoes a pooler fault that may still be in force: a stopped pooler is started, a paused one resumed. */
    public synchronized void heal() {
        if (pooler == null) {
            return;
        }
        if (!pooler.isRunning()) {
            pooler.restart();
        }
        try {
            pooler.admin("RESUME");
        } catch (InfrastructureException e) {
            log.debug("RESUME on the pooler: {} (it was not paused)", e.getMessage());
        }
    }

    @Override
    public synchronized void close() {
        if (pooler != null) {
            pooler.close();
        }
        if (pgProxy != null) {
            pgProxy.close();
        }
        if (replicationProxy != null) {
            replicationProxy.close();
        }
        if (ownServers) {
            if (standby != null) {
                standby.close();
            }
            primary.close();
            retired.forEach(PostgresServer::close);
        } else {
            database.close();
        }
    }
}
