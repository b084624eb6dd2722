package dev.fenceline.spring;

import dev.fenceline.db.DatabaseConfig;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * {@code fenceline.datasource.*}: a pool of Fenceline's own for the fenced writer and the fencing migrations.
 * Unset {@code url}: the application's DataSource is used.
 */
public class DatasourceProperties extends SessionTimeoutProperties {
    static final PropertyNames PROPERTIES = PropertyNames.of(
            "fenceline.datasource",
            List.of(
                    "username",
                    "maximumPoolSize",
                    "minimumIdle",
                    "connectionTimeout",
                    "lockTimeout",
                    "idleInTransactionSessionTimeout",
                    "statementTimeout",
                    "applicationName",
                    "poolName"),
            Map.of("jdbcUrl", "url"));

    /** JDBC URL (jdbc:postgresql:...) of Fenceline's own pool; unset: the application's DataSource is used. */
    private String url;

    /** PostgreSQL role of Fenceline's own pool. */
    private String username;

    /** Password of that role. */
    private String password;

    /** Pool size, 1 to 1000. */
    private int maximumPoolSize = 10;

    /** Idle connections kept; defaults to maximum-pool-size (a fixed-size pool). */
    private Integer minimumIdle;

    /** How long to wait for a connection from the pool, 250ms to 5min. */
    private Duration connectionTimeout = Duration.ofSeconds(5);

    /** statement_timeout of every session, 0 (off) to 1h. */
    private Duration statementTimeout = Duration.ZERO;

    /** application_name, shown in pg_stat_activity and in the rejection audit. */
    private String applicationName = "fenceline";

    /** HikariCP pool name. */
    private String poolName = "fenceline";

    /** Fenceline's own pool, when {@code url} is set; built and checked by {@link DatabaseConfig}. */
    DatabaseConfig databaseConfig() {
        return PROPERTIES.rethrow(() -> {
            DatabaseConfig.Builder b = DatabaseConfig.builder(url)
                    .username(username)
                    .password(password)
                    .maximumPoolSize(maximumPoolSize)
                    .connectionTimeout(connectionTimeout)
                    .lockTimeout(getLockTimeout())
                    .idleInTransactionSessionTimeout(getIdleInTransactionSessionTimeout())
                    .statementTimeout(statementTimeout)
                    .applicationName(applicationName)
                    .poolName(poolName);
            if (minimumIdle != null) {
                b.minimumIdle(minimumIdle);
            }
            return b.build();
        });
    }

    public String getUrl() {
        return url;
    }

    public void setUrl(String url) {
        this.url = url;
    }

    public String getUsername() {
        return username;
    }

    public void setUsername(String username) {
        this.username = username;
    }

    public String getPassword() {
        return password;
    }

    public void setPassword(String password) {
        this.password = password;
    }

    public int getMaximumPoolSize() {
        return maximumPoolSize;
    }

    public void setMaximumPoolSize(int maximumPoolSize) {
        this.maximumPoolSize = maximumPoolSize;
    }

    public Integer getMinimumIdle() {
        return minimumIdle;
    }

    public void setMinimumIdle(Integer minimumIdle) {
        this.minimumIdle = minimumIdle;
    }

    public Duration getConnectionTimeout() {
        return connectionTimeout;
    }

    public void setConnectionTimeout(Duration connectionTimeout) {
        this.connectionTimeout = connectionTimeout;
    }

    public Duration getStatementTimeout() {
        return statementTimeout;
    }

    public void setStatementTimeout(Duration statementTimeout) {
        this.statementTimeout = statementTimeout;
    }

    public String getApplicationName() {
        return applicationName;
    }

    public void setApplicationName(String applicationName) {
        this.applicationName = applicationName;
    }

    public String getPoolName() {
        return poolName;
    }

    public void setPoolName(String poolName) {
        this.poolName = poolName;
    }
}
