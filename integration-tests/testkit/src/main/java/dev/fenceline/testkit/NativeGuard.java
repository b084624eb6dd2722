package dev.fenceline.testkit;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Assumptions;

/**
 * Whether the native fencing guard ({@code migrations/native}, library {@code fenceline_guard}) loads on a test
 * server, for tests that run the same contract against the native and the PL/pgSQL guard.
 *
 * <p>On a developer machine without the library those tests are skipped; where {@value #REQUIRED_ENV}{@code =1} (set
 * by {@code scripts/test.sh} after {@code scripts/ensure-tools.sh} installed the library, i.e. in CI) they fail
 * instead, so a broken build or install of the library cannot hide behind a skip.
 */
public final class NativeGuard {
    /** Environment variable: {@code 1} makes a missing native guard a test failure instead of a skip. */
    public static final String REQUIRED_ENV = "FENCELINE_REQUIRE_NATIVE_GUARD";
    /** The library name, resolved through the server's {@code dynamic_library_path}. */
    public static final String LIBRARY = "fenceline_guard";

    private NativeGuard() {
    }

    public static boolean required() {
        return "1".equals(System.getenv(REQUIRED_ENV));
    }

    /** Tries to create a C function from the library in a rolled-back transaction; true when the server loads it. */
    public static boolean loads(TestDatabase db) {
        try (Connection c = db.server().superuserConnection(db.name())) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("CREATE FUNCTION pg_temp.fenceline_guard_probe() RETURNS trigger LANGUAGE c AS '"
                        + LIBRARY + "', 'fenceline_guard'");
                return true;
            } catch (SQLException e) {
                return false;
            } finally {
                c.rollback();
            }
        } catch (SQLException e) {
            throw new InfrastructureException("cannot connect to " + db.jdbcUrl() + ": " + e.getMessage(), e);
        }
    }

    /** Skips the calling test unless the library loads on {@code db}'s server; fails instead when {@link #required()}. */
    public static void assumeLoads(TestDatabase db) {
        if (loads(db)) {
            return;
        }
        String why = "the native guard library " + LIBRARY + " does not load on " + db.server().description()
                + "; build and install it with migrations/native/build.sh --install";
        if (required()) {
            throw new AssertionError(why + " (" + REQUIRED_ENV + "=1 demands it)");
        }
        Assumptions.assumeTrue(false, why);
    }
}
