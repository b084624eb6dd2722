package dev.fenceline.sample.cli;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionException;
import dev.fenceline.sample.db.SampleDatabase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import picocli.CommandLine.Option;

/** Options every command takes; each has an environment-variable equivalent and a default. */
public final class CommonOptions {
    public static final String DEFAULT_JDBC_URL = "jdbc:postgresql://127.0.0.1:5432/fenceline?user=postgres";
    public static final String DEFAULT_ETCD = "http://127.0.0.1:2379";
    public static final String DEFAULT_ELECTION = "settlement";

    @Option(
            names = "--jdbc-url",
            paramLabel = "URL",
            defaultValue = "${env:FENCELINE_JDBC_URL:-" + DEFAULT_JDBC_URL + "}",
            description = "PostgreSQL JDBC URL, direct or through a pooler (behind a transaction-mode pooler such as "
                    + "PgBouncer, add prepareThreshold=0) (env FENCELINE_JDBC_URL; default ${DEFAULT-VALUE}).")
    String jdbcUrl;

    @Option(
            names = "--db-user",
            paramLabel = "USER",
            defaultValue = "${env:FENCELINE_DB_USER}",
            description = "Database user, if not in the URL (env FENCELINE_DB_USER).")
    String dbUser;

    /**
     * No option takes the password itself: a command line is visible to every user of the machine (ps). It comes
     * from a file or from the environment.
     */
    @Option(
            names = "--db-password-file",
            paramLabel = "FILE",
            defaultValue = "${env:FENCELINE_DB_PASSWORD_FILE}",
            description = "File whose first line is the database password (env FENCELINE_DB_PASSWORD_FILE); or the"
                    + " password itself in env FENCELINE_DB_PASSWORD. There is no option for the password itself:"
                    + " a command line is visible to every user of the machine.")
    String dbPasswordFile;

    /** The database password: from --db-password-file, else env FENCELINE_DB_PASSWORD; null when neither is set. */
    String dbPassword() {
        String inEnvironment = System.getenv("FENCELINE_DB_PASSWORD");
        if (!present(dbPasswordFile)) {
            return present(inEnvironment) ? inEnvironment : null;
        }
        if (present(inEnvironment)) {
            throw new BadInputException("give the database password once: --db-password-file (or"
                    + " FENCELINE_DB_PASSWORD_FILE) or FENCELINE_DB_PASSWORD, not both");
        }
        java.nio.file.Path file =
                Validation.readableFile("--db-password-file", "FENCELINE_DB_PASSWORD_FILE", dbPasswordFile);
        try {
            return ElectionConfig.Builder.readPasswordFile("--db-password-file", file);
        } catch (ElectionException e) {
            throw new BadInputException(e.getMessage());
        }
    }

    @Option(
            names = "--etcd",
            paramLabel = "ENDPOINTS",
            defaultValue = "${env:FENCELINE_ETCD:-" + DEFAULT_ETCD + "}",
            description = "etcd client endpoints, comma-separated (env FENCELINE_ETCD; default ${DEFAULT-VALUE}).")
    String etcd;

    @Option(
            names = "--etcd-ca",
            paramLabel = "PEM",
            defaultValue = "${env:FENCELINE_ETCD_CA}",
            description =
                    "CA bundle that signed the etcd server certificates; needed for https:// endpoints (env FENCELINE_ETCD_CA).")
    String etcdCa;

    @Option(
            names = "--etcd-cert",
            paramLabel = "PEM",
            defaultValue = "${env:FENCELINE_ETCD_CERT}",
            description =
                    "Client certificate for etcd's --client-cert-auth; with --etcd-key (env FENCELINE_ETCD_CERT).")
    String etcdCert;

    @Option(
            names = "--etcd-key",
            paramLabel = "PEM",
            defaultValue = "${env:FENCELINE_ETCD_KEY}",
            description = "Private key of --etcd-cert, PKCS#8 PEM (env FENCELINE_ETCD_KEY).")
    String etcdKey;

    @Option(
            names = "--etcd-user",
            paramLabel = "USER",
            defaultValue = "${env:FENCELINE_ETCD_USER}",
            description = "etcd user (RBAC); with --etcd-password-file (env FENCELINE_ETCD_USER).")
    String etcdUser;

    @Option(
            names = "--etcd-password-file",
            paramLabel = "PATH",
            defaultValue = "${env:FENCELINE_ETCD_PASSWORD_FILE}",
            description = "File whose first line is the etcd user's password (env FENCELINE_ETCD_PASSWORD_FILE).")
    String etcdPasswordFile;

    @Option(
            names = "--election",
            paramLabel = "NAME",
            defaultValue = "${env:FENCELINE_ELECTION:-" + DEFAULT_ELECTION + "}",
            description =
                    "Election name; it is also the fencing resource (env FENCELINE_ELECTION; default ${DEFAULT-VALUE}).")
    String election;

    public String jdbcUrl() {
        return Validation.jdbcUrl(jdbcUrl);
    }

    public List<String> etcdEndpoints() {
        return Validation.etcdEndpoints(etcd);
    }

    public String election() {
        return Validation.electionName(election);
    }

    /**
     * How to reach etcd: endpoints, TLS files and credentials from the options (or their environment
     * variables), validated; ttl and meters are the caller's ({@code electionConfig().toBuilder().ttl(..)}).
     * @throws BadInputException naming the option and the value (a missing file: the option and the path)
     */
    public ElectionConfig electionConfig() {
        List<String> endpoints = etcdEndpoints();
        ElectionConfig.Builder b = ElectionConfig.builder()
                .endpoints(endpoints)
                .connectTimeout(Duration.ofSeconds(5))
                .meterRegistry(new SimpleMeterRegistry())
                .closeOnShutdown(false);
        boolean https = endpoints.get(0).startsWith("https://");
        if (present(etcdCa)) {
            if (!https) {
                throw new BadInputException("--etcd-ca needs https:// endpoints but --etcd is "
                        + String.join(",", endpoints) + " (env FENCELINE_ETCD_CA)");
            }
            b.tlsCaFile(Validation.readableFile("--etcd-ca", "FENCELINE_ETCD_CA", etcdCa));
        } else if (https) {
            throw new BadInputException("--etcd https:// endpoints need --etcd-ca (the CA bundle that signed the etcd "
                    + "server certificates; env FENCELINE_ETCD_CA)");
        }
        if (present(etcdCert) != present(etcdKey)) {
            throw new BadInputException(
                    "--etcd-cert and --etcd-key go together (env FENCELINE_ETCD_CERT, FENCELINE_ETCD_KEY); got "
                            + (present(etcdCert) ? "--etcd-cert only" : "--etcd-key only"));
        }
        if (present(etcdCert)) {
            if (!https) {
                throw new BadInputException(
                        "--etcd-cert needs https:// endpoints but --etcd is " + String.join(",", endpoints));
            }
            b.tlsClientCert(
                    Validation.readableFile("--etcd-cert", "FENCELINE_ETCD_CERT", etcdCert),
                    Validation.readableFile("--etcd-key", "FENCELINE_ETCD_KEY", etcdKey));
        }
        if (present(etcdUser) != present(etcdPasswordFile)) {
            throw new BadInputException("--etcd-user and --etcd-password-file go together (env FENCELINE_ETCD_USER, "
                    + "FENCELINE_ETCD_PASSWORD_FILE); got "
                    + (present(etcdUser) ? "--etcd-user only" : "--etcd-password-file only"));
        }
        if (present(etcdUser)) {
            java.nio.file.Path pw =
                    Validation.readableFile("--etcd-password-file", "FENCELINE_ETCD_PASSWORD_FILE", etcdPasswordFile);
            try {
                b.credentials(etcdUser, ElectionConfig.Builder.readPasswordFile("--etcd-password-file", pw));
            } catch (ElectionException e) {
                throw new BadInputException(e.getMessage());
            }
        }
        try {
            return b.build();
        } catch (ElectionException e) {
            throw new BadInputException("etcd options: " + e.getMessage());
        }
    }

    private static boolean present(String s) {
        return s != null && !s.isBlank();
    }

    /** Validates URL and election name (not etcd), for commands that only use the database. */
    public void validateDatabaseOptions() {
        jdbcUrl();
        dbPassword();
        election();
    }

    /** Validates the database URL, the etcd options (endpoints, TLS files, credentials) and the election name. */
    public void validateAll() {
        jdbcUrl();
        dbPassword();
        electionConfig();
        election();
    }

    public SampleDatabase openDatabase(String applicationName, int poolSize) {
        return SampleDatabase.open(jdbcUrl(), dbUser, dbPassword(), applicationName, poolSize);
    }
}
