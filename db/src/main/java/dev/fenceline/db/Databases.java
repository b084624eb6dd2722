package dev.fenceline.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;

/**
 * Factories for pooled PostgreSQL data sources and jOOQ contexts.
 *
 * <p>The fenced-connection settings ({@code lock_timeout}, {@code idle_in_transaction_session_timeout},
 * {@code statement_timeout}, {@code application_name}) travel in the startup packet (pgjdbc {@code options} /
 * {@code ApplicationName}), so they cost no round trip and hold for every session of the pool.
 */
public final class Databases {
    static {
        // jOOQ prints a banner and tips on first use unless told not to.
        if (System.getProperty("org.jooq.no-logo") == null) {
            System.setProperty("org.jooq.no-logo", "true");
        }
        if (System.getProperty("org.jooq.no-tips") == null) {
            System.setProperty("org.jooq.no-tips", "true");
        }
    }

    private Databases() {}

    /** A HikariCP pool configured from {@code config}; close it when done. */
    public static HikariDataSource dataSource(DatabaseConfig config) {
        return new HikariDataSource(hikariConfig(config));
    }

    /** The HikariCP configuration {@link #dataSource(DatabaseConfig)} uses, for callers that want to adjust it. */
    public static HikariConfig hikariConfig(DatabaseConfig config) {
        Objects.requireNonNull(config, "config");
        HikariConfig h = new HikariConfig();
        h.setJdbcUrl(config.jdbcUrl());
        h.setUsername(config.username());
        if (config.password() != null) {
            h.setPassword(config.password());
        }
        h.setPoolName(config.poolName());
        h.setMaximumPoolSize(config.maximumPoolSize());
        h.setMinimumIdle(config.minimumIdle());
        h.setConnectionTimeout(config.connectionTimeout().toMillis());
        h.setAutoCommit(true);
        h.addDataSourceProperty("ApplicationName", config.applicationName());
        h.addDataSourceProperty("options", startupOptions(config));
        h.addDataSourceProperty("tcpKeepAlive", "true");
        return h;
    }

    /** The {@code -c name=value} startup options carrying the fenced-connection settings. */
    public static String startupOptions(DatabaseConfig config) {
        return "-c lock_timeout=" + millis(config.lockTimeout())
                + " -c idle_in_transaction_session_timeout=" + millis(config.idleInTransactionSessionTimeout())
                + " -c statement_timeout=" + millis(config.statementTimeout());
    }

    /** A jOOQ context for PostgreSQL over {@code dataSource} (no execute logging on the hot path). */
    public static DSLContext dsl(DataSource dataSource) {
        return DSL.using(Objects.requireNonNull(dataSource, "dataSource"), SQLDialect.POSTGRES, settings());
    }

    /** The jOOQ settings used by {@link #dsl(DataSource)}. */
    public static Settings settings() {
        return new Settings().withExecuteLogging(false).withRenderSchema(true);
    }

    private static long millis(Duration d) {
        return d.toMillis();
    }
}
