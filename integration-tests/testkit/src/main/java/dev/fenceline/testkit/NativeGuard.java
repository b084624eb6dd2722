package dev.fenceline.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Assumptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native fencing guard ({@code migrations/native}, library {@code fenceline_guard}) on test servers: where the
 * testkit finds the built library, how a server gets it, and whether it loads, for tests that run the same contract
 * against the native and the PL/pgSQL guard.
 *
 * <p>The library is never installed into the machine's PostgreSQL. {@code scripts/ensure-native-guard.sh} builds it
 * into {@code migrations/native/target/fenceline_guard.so} (next to {@code fenceline_guard.pg-major}, the server major
 * version it was built for); a server started from the machine's binaries copies it into its own temporary folder
 * and puts that folder first on its {@code dynamic_library_path}, so {@code LANGUAGE c AS 'fenceline_guard'} (the V5
 * migration, {@code fencing.use_native_guard()}) resolves to the copy. The library is found, in order, at
 * {@value #LIBRARY_PROPERTY} / {@value #LIBRARY_ENV} (the path of a {@code .so}; it must exist), else by walking up from
 * the working directory to a folder holding {@code migrations/native/target/fenceline_guard.so}. Zonky's embedded
 * server keeps the PL/pgSQL guard.
 *
 * <p>On a developer machine without the library the native tests are skipped; where {@value #REQUIRED_ENV}{@code =1}
 * (set by {@code scripts/test.sh} when the library was built, i.e. in CI) they fail instead, so a broken build or a
 * library the testkit cannot load cannot hide behind a skip.
 */
public final class NativeGuard {
    /** Environment variable: {@code 1} makes a missing native guard a test failure instead of a skip. */
    public static final String REQUIRED_ENV = "FENCELINE_REQUIRE_NATIVE_GUARD";
    /** The library name, resolved through the server's {@code dynamic_library_path}. */
    public static final String LIBRARY = "fenceline_guard";
    /** System property: the path of a built {@code fenceline_guard.so} to load instead of the checkout's. */
    public static final String LIBRARY_PROPERTY = "fenceline.native.guard.lib";
    /** Environment variable, read when {@value #LIBRARY_PROPERTY} is not set: same meaning. */
    public static final String LIBRARY_ENV = "FENCELINE_NATIVE_GUARD_LIB";
    /** Where {@code migrations/native/build.sh} puts the library, relative to the repository root. */
    static final Path BUILT_LIBRARY = Path.of("migrations", "native", "target", LIBRARY + ".so");
    /** Bound of the walk up from the working directory: deeper than any checkout, finite on any file system. */
    private static final int MAX_PARENT_LEVELS = 64;

    private static final Logger log = LoggerFactory.getLogger(NativeGuard.class);

    private NativeGuard() {}

    /**
     * The built library the testkit's servers load: {@value #LIBRARY_PROPERTY} / {@value #LIBRARY_ENV} when set (it
     * must be an existing file), else {@code migrations/native/target/fenceline_guard.so} in the nearest folder above
     * the working directory that has one; null when there is none (not built: the PL/pgSQL guard).
     */
    public static Path builtLibrary() {
        String configured = System.getProperty(LIBRARY_PROPERTY, System.getenv(LIBRARY_ENV));
        if (configured != null && !configured.isBlank()) {
            // An explicit path is the only candidate: silently loading the checkout's library would hide the mistake.
            Path p = Path.of(configured.strip()).toAbsolutePath();
            if (!Files.isRegularFile(p) || !Files.isReadable(p)) {
                throw new InfrastructureException(LIBRARY_PROPERTY + " / " + LIBRARY_ENV + " must name a readable "
                        + LIBRARY + ".so file, was '" + configured + "'");
            }
            return p;
        }
        return findBuiltLibrary(Path.of(System.getProperty("user.dir")));
    }

    /** {@code migrations/native/target/fenceline_guard.so} in {@code start} or its nearest ancestor that has one. */
    static Path findBuiltLibrary(Path start) {
        Path dir = start.toAbsolutePath().normalize();
        for (int level = 0; dir != null && level <= MAX_PARENT_LEVELS; level++, dir = dir.getParent()) {
            Path candidate = dir.resolve(BUILT_LIBRARY);
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    /** The marker {@code build.sh} writes next to {@code X.so}: {@code X.pg-major}, the server major it was built for. */
    static Path majorMarker(Path library) {
        String name = library.getFileName().toString();
        String base = name.endsWith(".so") ? name.substring(0, name.length() - 3) : name;
        return library.resolveSibling(base + ".pg-major");
    }

    /** The major version in {@code library}'s marker, or -1 when there is no readable marker. */
    static int builtForMajor(Path library) {
        try {
            return Integer.parseInt(Files.readString(majorMarker(library)).strip());
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Copies {@code library} as {@code folder/fenceline_guard.so} when it was built for {@code serverMajor}, so that
     * a server with {@code folder} on its {@code dynamic_library_path} loads it by name. A copy, not a link: the server
     * runs as the {@code postgres} OS user, who may not reach the checkout (e.g. under mode-700 /root), and a rebuild
     * while the server runs must not change the file it has loaded. Returns the copy, or null (with the reason logged)
     * when the library was built for another major or its marker is missing; the server then keeps the PL/pgSQL guard.
     *
     * <p>Invariant: a returned copy was built for {@code serverMajor}, read from the marker before and after the copy
     * ({@code build.sh} removes the marker before replacing the library and writes it after), so a rebuild for another
     * major racing with the copy is noticed.
     */
    static Path stage(Path library, int serverMajor, Path folder) {
        int before = builtForMajor(library);
        if (before != serverMajor) {
            log.warn(
                    "not loading the native guard {}: {} says it was built for PostgreSQL major {}, the server is {} "
                            + "(rebuild it with scripts/ensure-native-guard.sh); fencing.guard() stays PL/pgSQL",
                    library,
                    majorMarker(library),
                    before < 0 ? "(missing or unreadable)" : before,
                    serverMajor);
            return null;
        }
        Path copy = folder.resolve(LIBRARY + ".so");
        try {
            Files.createDirectories(folder);
            Files.copy(library, copy, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new InfrastructureException(
                    "cannot copy the native guard " + library + " to " + copy + ": " + e.getMessage(), e);
        }
        int after = builtForMajor(library);
        if (after != serverMajor) {
            Processes.deleteQuietly(copy);
            log.warn(
                    "not loading the native guard {}: it was rebuilt while being copied (its marker {} now says {}, "
                            + "the server is {}); fencing.guard() stays PL/pgSQL",
                    library,
                    majorMarker(library),
                    after < 0 ? "(missing)" : after,
                    serverMajor);
            return null;
        }
        return copy;
    }

    public static boolean required() {
        return "1".equals(System.getenv(REQUIRED_ENV));
    }

    /** Tries to create a C function from the library in a rolled-back transaction; true when the server loads it. */
    public static boolean loads(TestDatabase db) {
        try (Connection c = db.server().superuserConnection(db.name())) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("CREATE FUNCTION pg_temp.fenceline_guard_probe() RETURNS trigger LANGUAGE c AS '" + LIBRARY
                        + "', 'fenceline_guard'");
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
        String why = "the native guard library " + LIBRARY + " does not load on "
                + db.server().description()
                + "; build it with scripts/ensure-native-guard.sh (into migrations/native/target/, which the testkit's "
                + "servers load from; " + LIBRARY_PROPERTY + " / " + LIBRARY_ENV + " names another build)";
        if (required()) {
            throw new AssertionError(why + " (" + REQUIRED_ENV + "=1 demands it)");
        }
        Assumptions.assumeTrue(false, why);
    }
}
