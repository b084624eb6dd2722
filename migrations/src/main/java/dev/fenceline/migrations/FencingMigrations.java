package dev.fenceline.migrations;

import java.util.Objects;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * Applies Fenceline's fencing schema (PostgreSQL schema {@code fencing}) with Flyway.
 *
 * <p>The migrations keep their own history table, {@code fencing.fencing_schema_history}, so they coexist with the
 * application's own Flyway (which normally uses {@code flyway_schema_history} in its own schema). Applying them again is
 * a no-op. The connecting role must own (or be able to create) schema {@code fencing}, create the {@code fencing_*}
 * roles unless they exist, and should be a superuser or a member of {@code pg_signal_backend} (an advance of a term
 * ends the transactions of older terms).
 */
public final class FencingMigrations {

    /** PostgreSQL schema that holds every fencing object. */
    public static final String SCHEMA = "fencing";
    /** Flyway history table (inside {@link #SCHEMA}). */
    public static final String HISTORY_TABLE = "fencing_schema_history";
    /** Classpath location of the SQL migrations. */
    public static final String LOCATION = "classpath:db/fencing";

    private FencingMigrations() {}

    /**
     * Applies pending fencing migrations.
     *
     * @return the number of migrations applied (0 when the schema is up to date)
     */
    public static int migrate(DataSource dataSource) {
        return migrate(dataSource, config -> {});
    }

    /**
     * Applies pending fencing migrations after letting the caller adjust the Flyway configuration (e.g. to add
     * placeholders, callbacks or {@code validateMigrationNaming}). Schema, history table and location are set first;
     * the customizer may override them at its own risk.
     *
     * @return the number of migrations applied (0 when the schema is up to date)
     */
    public static int migrate(DataSource dataSource, Consumer<FluentConfiguration> customizer) {
        Objects.requireNonNull(dataSource, "dataSource");
        Objects.requireNonNull(customizer, "customizer");
        FluentConfiguration config = configure(dataSource);
        customizer.accept(config);
        MigrateResult result = config.load().migrate();
        return result.migrationsExecuted;
    }

    /** The Flyway configuration used by {@link #migrate(DataSource)}, for callers that need {@code info()} etc. */
    public static FluentConfiguration configure(DataSource dataSource) {
        Objects.requireNonNull(dataSource, "dataSource");
        return Flyway.configure(FencingMigrations.class.getClassLoader())
                .dataSource(dataSource)
                .schemas(SCHEMA)
                .defaultSchema(SCHEMA)
                .createSchemas(true)
                .table(HISTORY_TABLE)
                .locations(LOCATION)
                .baselineOnMigrate(false)
                .cleanDisabled(true)
                .validateOnMigrate(true);
    }
}
