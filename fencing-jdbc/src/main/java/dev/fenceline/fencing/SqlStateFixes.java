package dev.fenceline.fencing;

import java.sql.SQLException;
import java.util.Map;

/**
 * The database failures that waiting cannot fix, by SQLSTATE, each with what fixes it: the one table that says which
 * of the writer's failures are permanent ({@link FenceUnavailableException#isTransient()}). Every other failure
 * (connections lost or refused for now, lock and statement timeouts, an advance that timed out, serialization
 * failures) may pass by itself.
 */
final class SqlStateFixes {
    private static final Map<String, String> FIXES = Map.of(
            "3F000", "schema fencing does not exist in this database: apply the fencing migrations"
                    + " (FencingMigrations.migrate) as the migration owner",
            "42P01", "a table of schema fencing is missing: apply the fencing migrations (FencingMigrations.migrate)",
            "42883", "a function of schema fencing is missing (migrations not applied, or older than this library):"
                    + " apply the fencing migrations (FencingMigrations.migrate)",
            "42501", "the login lacks a right the fence needs: make it a member of fencing_app"
                    + " (GRANT fencing_app TO <login>; docs/fencing.md, roles)",
            "28000", "the database refused the login: check the user name and pg_hba.conf",
            "28P01", "the database refused the password: check the password",
            "3D000", "the database named in the JDBC URL does not exist");

    private SqlStateFixes() {
    }

    /** What fixes the first SQLSTATE in {@code t}'s cause chain that waiting cannot fix; null when none is. */
    static String fixFor(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof SQLException e && e.getSQLState() != null) {
                return FIXES.get(e.getSQLState());
            }
        }
        return null;
    }
}
