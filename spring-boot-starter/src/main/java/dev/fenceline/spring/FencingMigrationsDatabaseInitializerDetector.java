package dev.fenceline.spring;

import java.util.Set;
import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDatabaseInitializerDetector;
import org.springframework.core.Ordered;

/**
 * Declares {@link FencingMigrationsInitializer} a database initializer ordered before Boot's own (Flyway's detectors
 * have orders 0 and 1): Boot then makes the application's {@code Flyway} and {@code FlywayMigrationInitializer}
 * beans, and every bean that depends on database initialization, depend on the fencing migrations.
 */
public class FencingMigrationsDatabaseInitializerDetector extends AbstractBeansOfTypeDatabaseInitializerDetector {
    static final int ORDER = Ordered.HIGHEST_PRECEDENCE + 100;

    @Override
    protected Set<Class<?>> getDatabaseInitializerBeanTypes() {
        return Set.of(FencingMigrationsInitializer.class);
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}
