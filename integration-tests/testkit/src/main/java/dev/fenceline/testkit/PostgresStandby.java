package dev.fenceline.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A streaming-replication standby of a {@link PostgresServer} (machine binaries only), itself a {@link PostgresServer}:
 * {@code pg_basebackup} from the primary (WAL streamed during the copy), {@code primary_conninfo} naming the standby
 * by its {@code application_name}, started with {@code pg_ctl} on 127.0.0.1 and a free port, stopped and reaped like
 * any other server of the testkit (a JVM shutdown hook and the {@link Reaper}).
 *
 * <p><b>Synchronous</b> ({@link Mode#SYNCHRONOUS}): the primary gets {@code synchronous_standby_names = '<name>'} and
 * {@code synchronous_commit = remote_apply} ({@code ALTER SYSTEM} + reload), and {@link #start} returns once
 * {@code pg_stat_replication} reports the standby as {@code sync}. From then on a commit is acknowledged to its
 * client only after the standby has applied it, so after {@link PostgresServer#crash()} of the primary and
 * {@link PostgresServer#promote()} of the standby every acknowledged commit is there (shown by
 * {@code PostgresStandbyIT}). <b>Asynchronous</b> ({@link Mode#ASYNCHRONOUS}): the primary acknowledges on its own
 * commit; what it had not shipped yet is lost by a failover.
 *
 * <p>The standby's own settings go last into its {@code postgresql.auto.conf} (which overrides what the copy
 * brought from the primary): its port and socket folder, {@code primary_conninfo}, and
 * {@code synchronous_standby_names = ''}, so that once promoted it does not wait for a standby of its own until one
 * is attached with {@link #start} (it then becomes that standby's primary). The native guard, when the primary loads
 * one, is copied into the standby's folder and put first on its {@code dynamic_library_path} as well.
 *
 * <p>Needs trust authentication on the primary (the testkit's default; {@code initdb -A trust} allows replication
 * connections from 127.0.0.1).
 */
public final class PostgresStandby {
    private static final Logger log = LoggerFactory.getLogger(PostgresStandby.class);
    private static final Duration REPLICATION_TIMEOUT = Duration.ofSeconds(60);

    /** How the primary waits for the standby. */
    public enum Mode {
        /** {@code synchronous_standby_names} names the standby, {@code synchronous_commit = remote_apply}. */
        SYNCHRONOUS,
        /** The primary does not wait: acknowledged commits can be lost by a failover. */
        ASYNCHRONOUS
    }

    private PostgresStandby() {}

    /**
     * Creates and starts a standby of {@code primary} named {@code name} ([a-z][a-z0-9_]*, its
     * {@code application_name} on the primary), and returns once the primary streams to it (and, synchronous, lists
     * it as {@code sync}), at most 60 s. The standby is a new {@link PostgresServer}: {@code close()} stops it and
     * deletes its folder.
     */
    public static PostgresServer start(PostgresServer primary, String name, Mode mode) {
        return start(primary, name, mode, 0);
    }

    /**
     * Like {@link #start(PostgresServer, String, Mode)}, but the standby streams WAL from {@code replicationPort} on
     * 127.0.0.1 (e.g. a TCP proxy in front of the primary, to delay or cut replication) instead of the primary's own
     * port; 0 = the primary's port. The base backup is taken from the primary directly.
     */
    public static PostgresServer start(PostgresServer primary, String name, Mode mode, int replicationPort) {
        Objects.requireNonNull(primary, "primary");
        if (replicationPort != 0 && (replicationPort < 1024 || replicationPort > 65535)) {
            throw new IllegalArgumentException("replicationPort must be 0 (the primary's own) or between 1024 and "
                    + "65535, was " + replicationPort);
        }
        Objects.requireNonNull(mode, "mode");
        if (name == null || !name.matches("[a-z][a-z0-9_]{0,62}")) {
            throw new IllegalArgumentException(
                    "standby name must be 1 to 63 characters of [a-z0-9_] starting with a " + "letter, was " + name);
        }
        if (primary.superuserPassword() != null) {
            throw new InfrastructureException("a standby needs a primary with trust authentication (the testkit's "
                    + "default); this one asks for passwords");
        }
        Path primaryData = primary.dataDirectory();
        Path bin = primary.binDir();
        boolean root = Processes.runningAsRoot();
        int port = FreePorts.next();
        FreePorts.requireFree(port, "PostgreSQL standby");
        Path folder;
        try {
            folder = Files.createTempDirectory("fenceline-pg-standby-");
            Files.createDirectories(folder.resolve("sock"));
        } catch (IOException e) {
            throw new InfrastructureException("cannot create a folder for a PostgreSQL standby: " + e.getMessage(), e);
        }
        Reaper.get().deleteOnDeath(folder);
        Path data = folder.resolve("data");
        try {
            if (root) {
                Processes.runOrFail(
                        List.of("chown", "-R", "postgres:", folder.toString()), Duration.ofSeconds(30), null, Map.of());
                Processes.runOrFail(List.of("chmod", "755", folder.toString()), Duration.ofSeconds(30), null, Map.of());
            }
            // -R writes standby.signal (and a primary_conninfo, replaced below); -X stream copies the WAL written
            // during the copy too, so the standby is consistent as soon as it starts.
            Processes.runOrFail(
                    PostgresServer.LocalBinaries.asUser(
                            root,
                            List.of(
                                    bin.resolve("pg_basebackup").toString(),
                                    "-h",
                                    primary.host(),
                                    "-p",
                                    Integer.toString(primary.port()),
                                    "-U",
                                    primary.superuser(),
                                    "-D",
                                    data.toString(),
                                    "-X",
                                    "stream",
                                    "-c",
                                    "fast",
                                    "-R",
                                    "--no-sync")),
                    Duration.ofMinutes(3),
                    folder,
                    Map.of());
            Path guard = stageNativeGuard(primary, folder, root);
            StringBuilder conf = new StringBuilder(
                            "\n# standby settings written by the testkit (override the copy's)\n")
                    .append("port = ")
                    .append(port)
                    .append('\n')
                    .append("listen_addresses = '127.0.0.1'\n")
                    .append("unix_socket_directories = '")
                    .append(folder.resolve("sock"))
                    .append("'\n")
                    .append("primary_conninfo = 'host=")
                    .append(primary.host())
                    .append(" port=")
                    .append(replicationPort != 0 ? replicationPort : primary.port())
                    .append(" user=")
                    .append(primary.superuser())
                    .append(" application_name=")
                    .append(name)
                    .append("'\n")
                    .append("hot_standby = on\n")
                    .append("synchronous_standby_names = ''\n");
            if (guard != null) {
                conf.append("dynamic_library_path = '")
                        .append(guard.getParent())
                        .append(":$libdir'\n");
            }
            Files.writeString(
                    data.resolve("postgresql.auto.conf"), conf.toString(), java.nio.file.StandardOpenOption.APPEND);
            Files.deleteIfExists(data.resolve("postmaster.pid"));
        } catch (IOException | RuntimeException e) {
            Processes.deleteTree(folder);
            throw e instanceof InfrastructureException ie
                    ? ie
                    : new InfrastructureException(
                            "cannot prepare a standby of " + "PostgreSQL 127.0.0.1:" + primary.port() + " in " + folder
                                    + ": " + e.getMessage(),
                            e);
        }
        Path logFile = folder.resolve("postgres.log");
        Processes.Result r = Processes.run(
                PostgresServer.LocalBinaries.asUser(
                        root,
                        List.of(
                                bin.resolve("pg_ctl").toString(),
                                "-D",
                                data.toString(),
                                "-l",
                                logFile.toString(),
                                "-w",
                                "-t",
                                "60",
                                "start")),
                Duration.ofSeconds(90),
                folder,
                Map.of());
        if (!r.ok()) {
            String tail = PostgresServer.LocalBinaries.tail(logFile);
            Processes.deleteTree(folder);
            throw new InfrastructureException("the standby did not start on 127.0.0.1:" + port + " (pg_ctl exit "
                    + r.exitCode() + "): " + r.stderr().strip() + "\n" + tail);
        }
        long pid = PostgresServer.readPostmasterPid(data);
        Reaper.get().watch(pid);
        Path guardCopy = folder.resolve("lib");
        PostgresServer standby = PostgresServer.adopt(
                new PostgresServer.LocalBinaries(
                        bin,
                        folder,
                        port,
                        root,
                        pid,
                        primary.nativeGuardLibrary() == null
                                ? null
                                : guardCopy.resolve(primary.nativeGuardLibrary().getFileName())),
                primary.options());
        try {
            if (mode == Mode.SYNCHRONOUS) {
                try (Connection c = primary.superuserConnection("postgres");
                        Statement s = c.createStatement()) {
                    s.execute("ALTER SYSTEM SET synchronous_standby_names = '" + name + "'");
                    s.execute("ALTER SYSTEM SET synchronous_commit = 'remote_apply'");
                    s.execute("SELECT pg_reload_conf()");
                }
            }
            awaitReplication(primary, name, mode == Mode.SYNCHRONOUS ? "sync" : null);
        } catch (SQLException | RuntimeException e) {
            standby.close();
            throw new InfrastructureException(
                    "the standby " + name + " on 127.0.0.1:" + port + " did not become a "
                            + mode.name().toLowerCase(java.util.Locale.ROOT) + " standby of 127.0.0.1:" + primary.port()
                            + ": "
                            + e.getMessage() + "\n" + PostgresServer.LocalBinaries.tail(logFile),
                    e);
        }
        log.info(
                "PostgreSQL standby {} ready on 127.0.0.1:{} (pid {}), {} of 127.0.0.1:{}",
                name,
                port,
                pid,
                mode == Mode.SYNCHRONOUS ? "synchronous (remote_apply)" : "asynchronous",
                primary.port());
        return standby;
    }

    /**
     * Waits until {@code pg_stat_replication} on {@code primary} shows {@code name} streaming (and, when
     * {@code syncState} is given, with that {@code sync_state}), at most 60 s.
     */
    static void awaitReplication(PostgresServer primary, String name, String syncState) throws SQLException {
        long deadline = System.nanoTime() + REPLICATION_TIMEOUT.toNanos();
        String seen = "no row";
        while (System.nanoTime() < deadline) {
            try (Connection c = primary.superuserConnection("postgres");
                    PreparedStatement ps = c.prepareStatement(
                            "SELECT state, sync_state FROM pg_stat_replication " + "WHERE application_name = ?")) {
                ps.setString(1, name);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        seen = "state=" + rs.getString(1) + ", sync_state=" + rs.getString(2);
                        if ("streaming".equals(rs.getString(1))
                                && (syncState == null || syncState.equals(rs.getString(2)))) {
                            return;
                        }
                    }
                }
            }
            PostgresServer.sleepQuietly(50);
        }
        throw new InfrastructureException("pg_stat_replication on 127.0.0.1:" + primary.port() + " did not show " + name
                + " streaming" + (syncState == null ? "" : " as " + syncState) + " within " + REPLICATION_TIMEOUT
                + " (last seen: " + seen + ")");
    }

    /** The primary's copy of the native guard, copied again into the standby's folder (or null when it has none). */
    private static Path stageNativeGuard(PostgresServer primary, Path folder, boolean root) throws IOException {
        Path library = primary.nativeGuardLibrary();
        if (library == null) {
            return null;
        }
        Path lib = folder.resolve("lib");
        Files.createDirectories(lib);
        Path copy = lib.resolve(library.getFileName());
        Files.copy(library, copy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        if (root) {
            Processes.runOrFail(
                    List.of("chown", "-R", "postgres:", lib.toString()), Duration.ofSeconds(30), null, Map.of());
        }
        return copy;
    }
}
