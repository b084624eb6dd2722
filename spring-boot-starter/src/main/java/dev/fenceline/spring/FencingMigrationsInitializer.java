package dev.fenceline.spring;

import dev.fenceline.migrations.FencingMigrations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.InitializingBean;

/**
 * Applies the fencing migrations when the context starts. {@link FencingMigrationsDatabaseInitializerDetector} makes
 * it a database initializer that runs before Boot's Flyway (and before every bean that depends on database
 * initialization), so the application's own migrations can call {@code fencing.protect_table}.
 */
public class FencingMigrationsInitializer implements InitializingBean {
    private static final Logger log = LoggerFactory.getLogger(FencingMigrationsInitializer.class);

    private final FencingDataSource dataSource;
    private int applied = -1;

    public FencingMigrationsInitializer(FencingDataSource dataSource) {
        this.dataSource = dataSource;
    }

    @Override
    public void afterPropertiesSet() {
        applied = FencingMigrations.migrate(dataSource.dataSource());
        log.info(
                "fencing migrations: {} applied (schema {}, history {}.{})",
                applied,
                FencingMigrations.SCHEMA,
                FencingMigrations.SCHEMA,
                FencingMigrations.HISTORY_TABLE);
    }

    /** How many fencing migrations this start applied (0: up to date; -1: not run yet). */
    public int applied() {
        return applied;
    }
}
