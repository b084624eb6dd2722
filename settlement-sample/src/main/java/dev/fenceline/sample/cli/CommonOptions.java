package dev.fenceline.sample.cli;

import dev.fenceline.sample.db.SampleDatabase;
import java.util.List;
import picocli.CommandLine.Option;

/** Options every command takes; each has an environment-variable equivalent and a default. */
public final class CommonOptions {
    public static final String DEFAULT_JDBC_URL = "jdbc:postgresql://127.0.0.1:5432/fenceline?user=postgres";
    public static final String DEFAULT_ETCD = "http://127.0.0.1:2379";
    public static final String DEFAULT_ELECTION = "settlement";

    @Option(names = "--jdbc-url", paramLabel = "URL",
            defaultValue = "${env:FENCELINE_JDBC_URL:-" + DEFAULT_JDBC_URL + "}",
            description = "PostgreSQL JDBC URL (env FENCELINE_JDBC_URL; default ${DEFAULT-VALUE}).")
    String jdbcUrl;

    @Option(names = "--db-user", paramLabel = "USER", defaultValue = "${env:FENCELINE_DB_USER}",
            description = "Database user, if not in the URL (env FENCELINE_DB_USER).")
    String dbUser;

    @Option(names = "--db-password", paramLabel = "PASSWORD", defaultValue = "${env:FENCELINE_DB_PASSWORD}",
            description = "Database password, if any (env FENCELINE_DB_PASSWORD).")
    String dbPassword;

    @Option(names = "--etcd", paramLabel = "ENDPOINTS",
            defaultValue = "${env:FENCELINE_ETCD:-" + DEFAULT_ETCD + "}",
            description = "etcd client endpoints, comma-separated (env FENCELINE_ETCD; default ${DEFAULT-VALUE}).")
    String etcd;

    @Option(names = "--election", paramLabel = "NAME",
            defaultValue = "${env:FENCELINE_ELECTION:-" + DEFAULT_ELECTION + "}",
            description = "Election name; it is also the fencing resource (env FENCELINE_ELECTION; default ${DEFAULT-VALUE}).")
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

    /** Validates URL and election name (not etcd), for commands that only use the database. */
    public void validateDatabaseOptions() {
        jdbcUrl();
        election();
    }

    /** Validates all three. */
    public void validateAll() {
        jdbcUrl();
        etcdEndpoints();
        election();
    }

    public SampleDatabase openDatabase(String applicationName, int poolSize) {
        return SampleDatabase.open(jdbcUrl(), dbUser, dbPassword, applicationName, poolSize);
    }
}
