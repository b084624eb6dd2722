package dev.fenceline.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real PgBouncer between clients and a {@link PostgresServer}, as a local child process on 127.0.0.1 and a free
 * port, so tests can put a transaction-mode pooler in the path.
 *
 * <p>What transaction pooling means for a client (shown by {@code PgBouncerIT}): consecutive transactions of one
 * client may run on different server sessions, and transactions of different clients on the same one. Anything
 * scoped to a session ({@code SET}, advisory locks, temp tables, named prepared statements) leaks to other clients
 * or disappears; only transaction-scoped state ({@code SET LOCAL}, {@code set_config(..., true)}) is reliable.
 * A setting passed in the startup packet ({@code options=-c name=value} in the JDBC URL) is dropped without an
 * error: PgBouncer 1.18 rejects unknown startup parameters, so {@code options} is in
 * {@code ignore_startup_parameters} (pgjdbc sends it whenever the {@code options} property is set).
 *
 * <p>Configuration written into a temporary folder (deleted by {@link #close()}, and by the {@link Reaper} if the
 * JVM dies): one wildcard database line {@code * = host=... port=...}, so every database of the server works
 * under its own name; the superuser {@code postgres} in {@code userlist.txt} and in {@code admin_users}, so the
 * admin console ({@code SHOW POOLS}, {@code PAUSE}, {@code RESUME}, {@code RECONNECT}, {@code KILL}) works through
 * {@link #admin(String)}; with {@code auth_type = trust}, other roles of the server are accepted too (looked up
 * through {@code auth_user = postgres}); no Unix socket; {@code server_reset_query} empty in transaction mode
 * (PgBouncer does not run it there anyway) and {@code DISCARD ALL} in session mode.
 *
 * <p>The binary: {@code -Dfenceline.pgbouncer.bin} / env {@code FENCELINE_PGBOUNCER_BIN}, else {@code pgbouncer} on
 * PATH, else {@code /usr/sbin/pgbouncer} (Debian's package; {@code scripts/ensure-pgbouncer.sh} installs it). When
 * it is missing, {@link #start} aborts the calling JUnit test with an assumption failure that says how to install
 * it, unless env {@code FENCELINE_REQUIRE_PGBOUNCER=1} (or {@code -Dfenceline.require.pgbouncer=true}) is set, or
 * JUnit is not on the class path: then it fails with an {@link InfrastructureException}.
 *
 * <p>PgBouncer refuses to run as root; as root it is started with {@code -u postgres}, which switches user inside
 * the same process. Unlike a {@code runuser} wrapper, that keeps {@link #pid()} the pooler's own pid, so
 * {@link #pause()} freezes the pooler itself and {@link #close()} signals exactly the process it started.
 *
 * <p>Invariant: at most one pooler process per instance, and after {@link #close()} none (its pid has exited) and
 * no configuration folder.
 */
public final class PgBouncer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PgBouncer.class);
    private static final String DEBIAN_BINARY = "/usr/sbin/pgbouncer";
    private static final Duration START_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration SERVER_DROP_TIMEOUT = Duration.ofSeconds(15);
    private static final Set<String> POOL_MODES = Set.of("transaction", "session");
    private static final Set<String> AUTH_TYPES = Set.of("trust", "plain", "md5", "scram-sha-256");
    /**
     * pgjdbc warns "Unsupported Server Version: 1.18.0/bouncer" on every admin console connection (the console
     * reports PgBouncer's version). Only that warning is dropped, for versions ending in "/bouncer"; the logger is
     * held here because java.util.logging keeps loggers weakly, and a collected one would lose the filter.
     */
    private static final java.util.logging.Logger PGJDBC_CONNECTION_LOG = quietAdminVersionWarning();

    /** How to configure the pooler. Immutable; use the {@code with}-style setters on {@link #defaults()}. */
    public static final class Options {
        private final String poolMode;
        private final int defaultPoolSize;
        private final int maxClientConn;
        private final String authType;
        private final String password;
        private final int serverPort;

        private Options(String poolMode, int defaultPoolSize, int maxClientConn, String authType, String password) {
            this(poolMode, defaultPoolSize, maxClientConn, authType, password, 0);
        }

        private Options(
                String poolMode,
                int defaultPoolSize,
                int maxClientConn,
                String authType,
                String password,
                int serverPort) {
            this.poolMode = poolMode;
            this.defaultPoolSize = defaultPoolSize;
            this.maxClientConn = maxClientConn;
            this.authType = authType;
            this.password = password;
            this.serverPort = serverPort;
        }

        /**
         * The port on the server's host (127.0.0.1) the pooler opens its server sessions to, instead of the server's
         * own: e.g. a TCP proxy in front of it, which a failover repoints at a promoted standby while the pooler's
         * configuration stays. 1024 to 65535; 0 (default) = the server's port. {@link #killServerConnections} still
         * asks the server given to {@link #start} to terminate sessions.
         */
        public Options serverPort(int value) {
            if (value != 0 && (value < 1024 || value > 65535)) {
                throw new IllegalArgumentException(
                        "serverPort must be 0 (the server's own) or between 1024 and 65535, " + "was " + value);
            }
            return new Options(poolMode, defaultPoolSize, maxClientConn, authType, password, value);
        }

        /**
         * Transaction pooling, 2 server sessions per database/user pair (small, so clients share server sessions),
         * 100 clients at most, {@code trust} authentication on loopback.
         */
        public static Options defaults() {
            return new Options("transaction", 2, 100, "trust", "fenceline");
        }

        /** {@code transaction} (default) or {@code session}. */
        public Options poolMode(String value) {
            String mode = Objects.requireNonNull(value, "poolMode").strip().toLowerCase(Locale.ROOT);
            if (!POOL_MODES.contains(mode)) {
                throw new IllegalArgumentException("poolMode must be one of " + POOL_MODES + ", was '" + value + "'");
            }
            return new Options(mode, defaultPoolSize, maxClientConn, authType, password, serverPort);
        }

        /** Server sessions per database/user pair, 1 to 1000 (default 2). */
        public Options defaultPoolSize(int value) {
            if (value < 1 || value > 1000) {
                throw new IllegalArgumentException("defaultPoolSize must be between 1 and 1000, was " + value);
            }
            return new Options(poolMode, value, maxClientConn, authType, password, serverPort);
        }

        /** Client connections the pooler accepts, 1 to 10000 (default 100). */
        public Options maxClientConn(int value) {
            if (value < 1 || value > 10000) {
                throw new IllegalArgumentException("maxClientConn must be between 1 and 10000, was " + value);
            }
            return new Options(poolMode, defaultPoolSize, value, authType, password, serverPort);
        }

        /**
         * How clients authenticate to the pooler: {@code trust} (default; any role of the server, no password),
         * or {@code plain}, {@code md5}, {@code scram-sha-256} for the superuser {@code postgres} with
         * {@link #password(String)}. The pooler logs in to PostgreSQL without a password either way (the server
         * trusts loopback).
         */
        public Options authType(String value) {
            String type = Objects.requireNonNull(value, "authType").strip().toLowerCase(Locale.ROOT);
            if (!AUTH_TYPES.contains(type)) {
                throw new IllegalArgumentException("authType must be one of " + AUTH_TYPES + ", was '" + value + "'");
            }
            return new Options(poolMode, defaultPoolSize, maxClientConn, type, password, serverPort);
        }

        /** The superuser's password at the pooler when {@link #authType} is not {@code trust} (default "fenceline"). */
        public Options password(String value) {
            if (value == null || value.isEmpty() || value.contains("\"")) {
                throw new IllegalArgumentException("password must be non-empty and without '\"', was "
                        + (value == null ? "null" : "'" + value + "'"));
            }
            return new Options(poolMode, defaultPoolSize, maxClientConn, authType, value, serverPort);
        }

        public String poolMode() {
            return poolMode;
        }

        public int defaultPoolSize() {
            return defaultPoolSize;
        }

        public int maxClientConn() {
            return maxClientConn;
        }

        public String authType() {
            return authType;
        }
    }

    private final PostgresServer server;
    private final Options options;
    private final Path binary;
    private final Path dir;
    private final boolean asPostgresUser;
    private final int port;
    private final Thread shutdownHook;
    private Process process;
    private boolean paused;
    private boolean closed;

    private PgBouncer(PostgresServer server, Options options, Path binary, Path dir, boolean asPostgresUser, int port) {
        this.server = server;
        this.options = options;
        this.binary = binary;
        this.dir = dir;
        this.asPostgresUser = asPostgresUser;
        this.port = port;
        this.shutdownHook = new Thread(this::close, "fenceline-pgbouncer-stop");
    }

    /**
     * Starts a pooler in front of {@code server} and waits (at most 20 s) until its admin console answers.
     * Aborts the calling test when the binary is missing (see the class comment).
     */
    public static PgBouncer start(PostgresServer server, Options options) {
        Objects.requireNonNull(server, "server");
        Objects.requireNonNull(options, "options");
        Path binary = binary();
        boolean root = Processes.runningAsRoot();
        if (root
                && Processes.run(List.of("id", "-u", "postgres"), Duration.ofSeconds(5), null, Map.of())
                                .exitCode()
                        != 0) {
            throw new InfrastructureException("running as root, and PgBouncer refuses root, but there is no "
                    + "'postgres' OS user to run it as. Create one (useradd -r postgres) or run as a non-root user.");
        }
        InfrastructureException last = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            int port = FreePorts.next();
            FreePorts.requireFree(port, "PgBouncer");
            Path dir = createFolder(root);
            PgBouncer bouncer = new PgBouncer(server, options, binary, dir, root, port);
            try {
                bouncer.writeConfig();
                bouncer.launch();
                Runtime.getRuntime().addShutdownHook(bouncer.shutdownHook);
                log.info(
                        "PgBouncer ready on 127.0.0.1:{} (pid {}, pool_mode={}, default_pool_size={}) in front of "
                                + "PostgreSQL 127.0.0.1:{}",
                        port,
                        bouncer.pid(),
                        options.poolMode,
                        options.defaultPoolSize,
                        server.port());
                return bouncer;
            } catch (InfrastructureException e) {
                last = e;
                bouncer.stopProcess();
                Processes.deleteTree(dir);
                // Only a port taken between choosing and binding it is worth another try; anything else would fail
                // the same way again.
                if (e.getMessage() == null || !e.getMessage().contains("Address already in use")) {
                    throw e;
                }
                log.warn("PgBouncer start on port {} failed, retrying on another port: {}", port, e.getMessage());
            }
        }
        throw last;
    }

    /**
     * The pgbouncer binary. When it is missing: a JUnit assumption failure (the test is skipped) with the command
     * that installs it, or an {@link InfrastructureException} when {@code FENCELINE_REQUIRE_PGBOUNCER=1} or JUnit
     * is absent. A configured path that is not executable always fails: silently skipping would hide the mistake.
     */
    public static Path binary() {
        String configured = System.getProperty("fenceline.pgbouncer.bin", System.getenv("FENCELINE_PGBOUNCER_BIN"));
        if (configured != null && !configured.isBlank()) {
            Path p = Path.of(configured);
            if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                return p;
            }
            throw new InfrastructureException("pgbouncer is configured as '" + configured + "' (fenceline.pgbouncer.bin"
                    + " / FENCELINE_PGBOUNCER_BIN) but that is not an executable file; unset it to use "
                    + DEBIAN_BINARY + ", or point it at a PgBouncer 1.18+ binary");
        }
        Path p = Processes.onPath("pgbouncer");
        if (p == null && Files.isExecutable(Path.of(DEBIAN_BINARY))) {
            p = Path.of(DEBIAN_BINARY);
        }
        if (p != null) {
            return p;
        }
        String message = "pgbouncer was not found on PATH nor at " + DEBIAN_BINARY + ". "
                + (Processes.runningAsRoot()
                        ? "Run scripts/ensure-pgbouncer.sh, which runs: apt-get install -y pgbouncer."
                        : "Ask an administrator to run 'sudo apt-get update && sudo apt-get install -y pgbouncer'.")
                + " Or set FENCELINE_PGBOUNCER_BIN to a PgBouncer 1.18+ binary.";
        boolean required = "1".equals(System.getenv("FENCELINE_REQUIRE_PGBOUNCER"))
                || Boolean.getBoolean("fenceline.require.pgbouncer");
        if (!required && JUnitAbort.available()) {
            JUnitAbort.abort(message + " (Set FENCELINE_REQUIRE_PGBOUNCER=1 to fail instead of skipping.)");
        }
        throw new InfrastructureException(message + (required ? " (FENCELINE_REQUIRE_PGBOUNCER=1: required.)" : ""));
    }

    /** Always 127.0.0.1: the pooler listens on loopback only. */
    public String host() {
        return "127.0.0.1";
    }

    /** The pooler's port; the same across {@link #restart()}. */
    public int port() {
        return port;
    }

    /** The pooler process's pid (a new one after {@link #restart()}). */
    public synchronized long pid() {
        if (process == null) {
            throw new IllegalStateException("PgBouncer on port " + port + " is not running (closed: " + closed + ")");
        }
        return process.pid();
    }

    public synchronized boolean isRunning() {
        return process != null && process.isAlive();
    }

    public Options options() {
        return options;
    }

    /** The PostgreSQL server behind the pooler. */
    public PostgresServer server() {
        return server;
    }

    /** The role clients log in as by default: the server's superuser. */
    public String user() {
        return server.superuser();
    }

    /** Null with {@code trust}, else the configured password of {@link #user()} at the pooler. */
    public String password() {
        return "trust".equals(options.authType) ? null : options.password;
    }

    /**
     * A pgjdbc URL for {@code database} through the pooler, with {@code prepareThreshold=0}: pgjdbc then uses only
     * unnamed statements, which survive transaction pooling. PgBouncer 1.18 does not track protocol-level
     * prepared statements, so a named one ({@code S_1}) created on one server session would be missing on the next.
     * The URL already has a query part: append further parameters with {@code &}.
     */
    public String jdbcUrl(String database) {
        return "jdbc:postgresql://" + host() + ":" + port + "/" + database + "?prepareThreshold=0";
    }

    /** An unpooled data source (as {@link #user()}) for {@code database} through the pooler. */
    public DataSource dataSource(String database) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(jdbcUrl(database));
        ds.setUser(user());
        if (password() != null) {
            ds.setPassword(password());
        }
        return ds;
    }

    /** A new client connection to {@code database} through the pooler as {@link #user()}; the caller closes it. */
    public Connection connection(String database) throws SQLException {
        return DriverManager.getConnection(jdbcUrl(database), user(), password());
    }

    /**
     * A connection to the admin console (the {@code pgbouncer} database) as {@link #user()}; the caller closes it.
     * Two pgjdbc settings make it work: {@code preferQueryMode=simple}, because the console speaks only the simple
     * query protocol; and {@code replication=database}, whose only effect here is that pgjdbc skips its setup
     * query. pgjdbc 42.7.6+ sends {@code SET extra_float_digits = 3} after login to any server reporting a version
     * below 12, the console reports {@code 1.18.0/bouncer}, and PgBouncer 1.18 answers that {@code SET} with
     * "SET failed" ({@code ignore_startup_parameters} covers startup packets, not queries). The replication
     * parameter itself is not sent: pgjdbc puts it in the startup packet only under
     * {@code assumeMinServerVersion >= 9.4}, which must therefore stay unset. The driver logs a harmless
     * "Unsupported Server Version" warning.
     */
    public Connection adminConnection() throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", user());
        if (password() != null) {
            props.setProperty("password", password());
        }
        props.setProperty("preferQueryMode", "simple");
        props.setProperty("replication", "database");
        // Bounded even against a frozen pooler (pause()): the kernel completes the TCP handshake, the login hangs.
        props.setProperty("connectTimeout", "5");
        props.setProperty("loginTimeout", "10");
        props.setProperty("socketTimeout", "30");
        return DriverManager.getConnection("jdbc:postgresql://" + host() + ":" + port + "/pgbouncer", props);
    }

    /**
     * Runs one admin console command ({@code SHOW POOLS}, {@code PAUSE db}, {@code RESUME}, {@code RECONNECT},
     * {@code KILL db}, ...) on a fresh admin connection and returns its rows, column name to text value, in order;
     * empty for commands without rows. Fails with {@link InfrastructureException} when the console refuses.
     */
    public List<Map<String, String>> admin(String command) {
        try (Connection c = adminConnection();
                Statement s = c.createStatement()) {
            List<Map<String, String>> rows = new ArrayList<>();
            if (s.execute(command)) {
                try (ResultSet rs = s.getResultSet()) {
                    ResultSetMetaData md = rs.getMetaData();
                    while (rs.next()) {
                        Map<String, String> row = new LinkedHashMap<>();
                        for (int i = 1; i <= md.getColumnCount(); i++) {
                            row.put(md.getColumnLabel(i), rs.getString(i));
                        }
                        rows.add(row);
                    }
                }
            }
            return rows;
        } catch (SQLException e) {
            throw new InfrastructureException(
                    "PgBouncer admin command '" + command + "' on 127.0.0.1:" + port + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * Terminates, from PostgreSQL's side ({@code pg_terminate_backend}), every server session this pooler holds
     * for {@code database} (their backend pids come from {@code SHOW SERVERS}), then waits (at most 15 s) until the
     * pooler has dropped them. Client connections stay open: an idle client's next transaction gets a fresh server
     * session; a client in the middle of a transaction on a killed session gets an error. This is what a server
     * restart or an administrator's {@code pg_terminate_backend} does behind a pooler. (The admin console's
     * {@code KILL db} instead disconnects the clients too; use {@link #admin(String)} for that.) Returns the number
     * of server sessions terminated. The pooler must not be {@link #pause() paused}.
     */
    public int killServerConnections(String database) {
        Objects.requireNonNull(database, "database");
        Set<Long> backends = serverBackendPids(database);
        if (backends.isEmpty()) {
            return 0;
        }
        try (Connection c = server.superuserConnection("postgres");
                Statement s = c.createStatement()) {
            s.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid IN ("
                    + backends.stream().map(String::valueOf).collect(Collectors.joining(",")) + ")");
        } catch (SQLException e) {
            throw new InfrastructureException(
                    "cannot terminate the server sessions " + backends + " of PgBouncer " + "127.0.0.1:" + port + " on "
                            + server.jdbcUrl("postgres") + ": " + e.getMessage(),
                    e);
        }
        long deadline = System.nanoTime() + SERVER_DROP_TIMEOUT.toNanos();
        Set<Long> left = backends;
        while (System.nanoTime() < deadline) {
            Set<Long> now = serverBackendPids(database);
            now.retainAll(backends);
            left = now;
            if (left.isEmpty()) {
                return backends.size();
            }
            PostgresServer.sleepQuietly(50);
        }
        throw new InfrastructureException("PgBouncer 127.0.0.1:" + port + " still lists the terminated server "
                + "sessions " + left + " of database " + database + " after " + SERVER_DROP_TIMEOUT);
    }

    private Set<Long> serverBackendPids(String database) {
        return admin("SHOW SERVERS").stream()
                .filter(row -> database.equals(row.get("database")))
                .map(row -> row.get("remote_pid"))
                .filter(pid -> pid != null && !pid.isBlank() && !"0".equals(pid))
                .map(Long::parseLong)
                .collect(Collectors.toCollection(java.util.HashSet::new));
    }

    /**
     * SIGSTOP: the pooler freezes with its sockets open (a stalled pooler host), so clients hang rather than fail.
     * Returns once the kernel reports the process stopped (signal delivery is asynchronous), at most 5 s.
     * Not the admin console's {@code PAUSE}, which stops handing out server sessions but keeps answering.
     */
    public synchronized void pause() {
        if (!isRunning()) {
            throw new IllegalStateException("cannot pause PgBouncer on port " + port + ": it is not running");
        }
        Processes.signal(process.pid(), "STOP");
        paused = true;
        awaitStopped(true);
    }

    /** SIGCONT, and returns once the process is no longer stopped (at most 5 s). A no-op when not paused. */
    public synchronized void resume() {
        if (paused && isRunning()) {
            Processes.signal(process.pid(), "CONT");
            awaitStopped(false);
        }
        paused = false;
    }

    /** Polls /proc/PID/stat until the process is (or is no longer) in state T; skipped where /proc is absent. */
    private void awaitStopped(boolean stopped) {
        Path stat = Path.of("/proc", Long.toString(process.pid()), "stat");
        if (!Files.exists(Path.of("/proc/self/stat"))) {
            return;
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        String state = "?";
        while (System.nanoTime() < deadline) {
            try {
                String line = Files.readString(stat);
                int end = line.lastIndexOf(')');
                state = line.substring(end + 2, end + 3);
            } catch (IOException | RuntimeException e) {
                state = "gone";
            }
            if ("T".equals(state) == stopped) {
                return;
            }
            PostgresServer.sleepQuietly(5);
        }
        throw new InfrastructureException("PgBouncer pid " + process.pid() + " should be "
                + (stopped ? "" : "no longer ") + "stopped (state T) within 5 s of SIG" + (stopped ? "STOP" : "CONT")
                + ", but its state is " + state);
    }

    public synchronized boolean isPaused() {
        return paused && isRunning();
    }

    /**
     * Stops the pooler (SIGTERM: clients and server sessions are dropped) and starts a new one on the same port
     * with the same configuration, waiting (at most 20 s) until it answers. Works whether it was running, paused
     * or stopped; throws {@link InfrastructureException} with the log tail if the new process does not come up.
     */
    public synchronized void restart() {
        if (closed) {
            throw new IllegalStateException("PgBouncer on port " + port + " is closed");
        }
        stopProcess();
        launch();
    }

    /** SIGTERM to the pooler's pid, SIGKILL if it has not exited within 10 s; then the folder is deleted. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        stopProcess();
        Processes.deleteTree(dir);
        if (Thread.currentThread() != shutdownHook) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException | IllegalArgumentException ignored) {
                // the JVM is already shutting down, or the hook was never registered (start failed)
            }
        }
    }

    /** The configuration folder (pgbouncer.ini, userlist.txt, pgbouncer.log); gone after {@link #close()}. */
    public Path folder() {
        return dir;
    }

    @Override
    public String toString() {
        return "PgBouncer(127.0.0.1:" + port + " -> " + server.host() + ":"
                + (options.serverPort != 0 ? options.serverPort : server.port()) + ", "
                + options.poolMode + ")";
    }

    private static Path createFolder(boolean root) {
        try {
            // The system temp folder, not the build folder: as root the pooler runs as postgres and must read it,
            // and /root (a common checkout place here) is mode 700.
            Path dir = Files.createTempDirectory("fenceline-pgbouncer-");
            Reaper.get().deleteOnDeath(dir);
            if (root) {
                Processes.runOrFail(List.of("chmod", "755", dir.toString()), Duration.ofSeconds(10), null, Map.of());
            }
            return dir;
        } catch (IOException e) {
            throw new InfrastructureException(
                    "cannot create a PgBouncer folder under " + System.getProperty("java.io.tmpdir") + ": "
                            + e.getMessage(),
                    e);
        }
    }

    private void writeConfig() {
        boolean transaction = "transaction".equals(options.poolMode);
        String userlist = "trust".equals(options.authType)
                ? "\"" + user() + "\" \"\"\n"
                : "\"" + user() + "\" \"" + options.password + "\"\n";
        List<String> ini = new ArrayList<>(List.of(
                "[databases]",
                // Wildcard: every database of the server under its own name, so per-test databases need no entry.
                "* = host=" + server.host() + " port=" + (options.serverPort != 0 ? options.serverPort : server.port()),
                "",
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                "listen_port = " + port,
                // No Unix socket: nothing outside the folder, and no clash on the default /tmp/.s.PGSQL.6432.
                "unix_socket_dir =",
                "auth_type = " + options.authType,
                "auth_file = " + dir.resolve("userlist.txt"),
                "admin_users = " + user(),
                "stats_users = " + user(),
                "pool_mode = " + options.poolMode,
                "default_pool_size = " + options.defaultPoolSize,
                "max_client_conn = " + options.maxClientConn,
                // 1.18 refuses a connection with an unknown startup parameter: pgjdbc sends options when set, and
                // pgjdbc before 42.7.6 (and other drivers) send extra_float_digits.
                "ignore_startup_parameters = extra_float_digits,options",
                // Transaction mode never runs it; session mode resets the session before the next client gets it.
                "server_reset_query = " + (transaction ? "" : "DISCARD ALL"),
                "log_connections = 1",
                "log_disconnections = 1"));
        if ("trust".equals(options.authType)) {
            // Roles other than the superuser are looked up on the server (pg_shadow) instead of the userlist.
            ini.add("auth_user = " + user());
        }
        try {
            Files.writeString(dir.resolve("userlist.txt"), userlist);
            Files.writeString(dir.resolve("pgbouncer.ini"), String.join("\n", ini) + "\n");
        } catch (IOException e) {
            throw new InfrastructureException(
                    "cannot write the PgBouncer configuration into " + dir + ": " + e.getMessage(), e);
        }
        if (asPostgresUser) {
            Processes.runOrFail(
                    List.of(
                            "chmod",
                            "644",
                            dir.resolve("userlist.txt").toString(),
                            dir.resolve("pgbouncer.ini").toString()),
                    Duration.ofSeconds(10),
                    null,
                    Map.of());
        }
    }

    /** Starts the process in the foreground and waits until the admin console answers; fails with the log tail. */
    private synchronized void launch() {
        List<String> cmd = new ArrayList<>(List.of(binary.toString()));
        if (asPostgresUser) {
            cmd.addAll(List.of("-u", "postgres"));
        }
        cmd.add(dir.resolve("pgbouncer.ini").toString());
        Path logFile = dir.resolve("pgbouncer.log");
        try {
            process = new ProcessBuilder(cmd)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .start();
        } catch (IOException e) {
            throw new InfrastructureException("cannot start " + String.join(" ", cmd) + ": " + e.getMessage(), e);
        }
        paused = false;
        Reaper.get().watch(process.pid());
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        String last = "";
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new InfrastructureException("PgBouncer exited with " + process.exitValue() + " right after start "
                        + "on 127.0.0.1:" + port + " (" + String.join(" ", cmd) + "):\n" + tail(logFile));
            }
            try (Connection c = adminConnection();
                    Statement s = c.createStatement()) {
                s.execute("SHOW VERSION");
                return;
            } catch (SQLException e) {
                last = e.getMessage();
                PostgresServer.sleepQuietly(50);
            }
        }
        throw new InfrastructureException("PgBouncer did not answer on 127.0.0.1:" + port + " within " + START_TIMEOUT
                + " (last error: " + last + "):\n" + tail(logFile));
    }

    /** SIGCONT (a stopped process cannot act on SIGTERM) and SIGTERM to our pid only; SIGKILL after 10 s. */
    private synchronized void stopProcess() {
        if (process == null) {
            return;
        }
        long pid = process.pid();
        if (process.isAlive()) {
            Processes.signal(pid, "CONT");
            Processes.signal(pid, "TERM");
            try {
                if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                    log.warn("PgBouncer pid {} did not exit within {} of SIGTERM; sending SIGKILL", pid, STOP_TIMEOUT);
                    process.destroyForcibly();
                    process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
        }
        if (!process.isAlive()) {
            // Only once it is gone: pids are reused, and the reaper must not kill a stranger later.
            Reaper.get().forget(pid);
        }
        paused = false;
    }

    private static String tail(Path file) {
        try {
            List<String> lines = Files.readAllLines(file);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no PgBouncer log at " + file + ")";
        }
    }

    private static java.util.logging.Logger quietAdminVersionWarning() {
        java.util.logging.Logger logger = java.util.logging.Logger.getLogger("org.postgresql.jdbc.PgConnection");
        java.util.logging.Filter previous = logger.getFilter();
        logger.setFilter(record -> {
            Object[] params = record.getParameters();
            boolean adminConsoleVersion = record.getMessage() != null
                    && record.getMessage().startsWith("Unsupported Server Version")
                    && params != null
                    && params.length > 0
                    && String.valueOf(params[0]).endsWith("/bouncer");
            return !adminConsoleVersion && (previous == null || previous.isLoggable(record));
        });
        return logger;
    }

    /** JUnit is optional for the testkit (the demo runs without it): only touch it when it is there. */
    private static final class JUnitAbort {
        static boolean available() {
            try {
                Class.forName("org.junit.jupiter.api.Assumptions", false, PgBouncer.class.getClassLoader());
                return true;
            } catch (ClassNotFoundException e) {
                return false;
            }
        }

        static void abort(String message) {
            org.junit.jupiter.api.Assumptions.assumeTrue(false, message);
        }
    }
}
