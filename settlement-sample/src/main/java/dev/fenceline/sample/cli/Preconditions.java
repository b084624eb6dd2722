package dev.fenceline.sample.cli;

import dev.fenceline.sample.db.SampleDatabase;
import java.sql.SQLException;

/** Checks against the database that come after option validation and before any change. */
final class Preconditions {
    private Preconditions() {}

    /** The election must name a fencing resource registered in this database (the sample serves `settlement`). */
    static void requireKnownElection(SampleDatabase db, String election) throws SQLException {
        if (!db.isResourceRegistered(election)) {
            var known = db.registeredResources();
            throw new BadInputException(
                    "unknown election '" + election + "': no fencing resource of that name is registered in "
                            + SampleDatabase.redact(db.jdbcUrl())
                            + (known.isEmpty()
                                    ? " (the database is not migrated: run 'fenceline migrate' first)"
                                    : " (registered: " + String.join(", ", known) + ")"));
        }
    }

    static void requireMigrated(SampleDatabase db) throws SQLException {
        if (!db.isSampleSchemaMigrated()) {
            throw new IllegalStateException("the settlement schema is missing in " + SampleDatabase.redact(db.jdbcUrl())
                    + ": run 'fenceline migrate' first");
        }
    }
}
