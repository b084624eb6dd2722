package dev.fenceline.sample.db;

import dev.fenceline.migrations.FencingMigrations;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * Applies, in order, the fencing migrations (schema {@code fencing}) and then the sample's own
 * migrations (schema {@code settlement}, history table {@code settlement_schema_history}, location
 * {@code classpath:db/settlement}). Both are idempotent: a second run applies nothing.
 */
public final class SampleMigrations {
    public static final String SCHEMA = "settlement";
    public static final String HISTORY_TABLE = "settlement_schema_history";
    public static final String LOCATION = "classpath:db/settlement";

    private SampleMigrations() {}

    /** Returns the number of sample migrations applied by this call (0 when already up to date). */
    public static int migrate(DataSource ds) {
        FencingMigrations.migrate(ds);
        MigrateResult r = Flyway.configure()
                .dataSource(ds)
                .schemas(SCHEMA)
                .defaultSchema(SCHEMA)
                .createSchemas(true)
                .table(HISTORY_TABLE)
                .locations(LOCATION)
                .load()
                .migrate();
        return r.migrationsExecuted;
    }
}
