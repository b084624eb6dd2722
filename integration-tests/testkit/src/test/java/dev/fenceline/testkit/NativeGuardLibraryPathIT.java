package dev.fenceline.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A fresh server from the machine's binaries loads the native guard built into {@code migrations/native/target/}
 * from its own copy, by name, without the library being installed into the machine PostgreSQL's libdir. What proves
 * "not from the libdir" even on a machine where an old copy is installed there: the backend that resolved the bare
 * name {@code fenceline_guard} has the server's copy mapped into its memory ({@code /proc/PID/maps}) and no file from
 * the libdir.
 */
class NativeGuardLibraryPathIT {

    @Test
    void freshServerLoadsTheBuiltLibraryByNameFromItsOwnCopy() throws Exception {
        Path built = NativeGuard.builtLibrary();
        if (built == null) {
            String why = "the native guard is not built (scripts/ensure-native-guard.sh builds it into "
                    + NativeGuard.BUILT_LIBRARY + ")";
            if (NativeGuard.required()) {
                throw new AssertionError(why + " and " + NativeGuard.REQUIRED_ENV + "=1 demands it");
            }
            Assumptions.assumeTrue(false, why);
        }
        try (PostgresServer server =
                PostgresServer.start(PostgresServer.Options.defaults().backend("local"))) {
            Path copy = server.nativeGuardLibrary();
            assertThat(copy)
                    .as(
                            "the server's copy of %s (built for PostgreSQL %s, marker %s)",
                            built, NativeGuard.builtForMajor(built), NativeGuard.majorMarker(built))
                    .isNotNull();
            assertThat(Files.mismatch(copy, built))
                    .as("the copy is byte for byte the built library")
                    .isEqualTo(-1L);
            assertThat(copy.getFileName().toString()).isEqualTo(NativeGuard.LIBRARY + ".so");

            try (TestDatabase db = server.createDatabase("native_guard_path");
                    Connection c = server.superuserConnection(db.name());
                    Statement s = c.createStatement()) {
                String path = text(s, "SELECT setting FROM pg_settings WHERE name = 'dynamic_library_path'");
                assertThat(Arrays.asList(path.split(":")))
                        .as("dynamic_library_path")
                        .startsWith(copy.getParent().toString())
                        .contains("$libdir");
                String libdir = text(s, "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'");
                assertThat(copy.startsWith(Path.of(libdir)))
                        .as("copy %s outside libdir %s", copy, libdir)
                        .isFalse();

                // By absolute path: the copy itself is a loadable library for this server.
                s.execute("CREATE FUNCTION pg_temp.guard_by_path() RETURNS trigger LANGUAGE c AS '" + copy
                        + "', 'fenceline_guard'");
                assertThat(text(s, "SELECT probin FROM pg_proc WHERE proname = 'guard_by_path'"))
                        .isEqualTo(copy.toString());
            }

            // By bare name, as the V5 migration and fencing.use_native_guard() do, in a fresh backend.
            try (TestDatabase db = server.createDatabase("native_guard_name");
                    Connection c = server.superuserConnection(db.name());
                    Statement s = c.createStatement()) {
                s.execute("CREATE FUNCTION pg_temp.guard_by_name() RETURNS trigger LANGUAGE c AS '"
                        + NativeGuard.LIBRARY + "', 'fenceline_guard'");
                assertThat(text(s, "SELECT probin FROM pg_proc WHERE proname = 'guard_by_name'"))
                        .isEqualTo(NativeGuard.LIBRARY);
                long backendPid = Long.parseLong(text(s, "SELECT pg_backend_pid()"));
                Path maps = Path.of("/proc", Long.toString(backendPid), "maps");
                Assumptions.assumeTrue(Files.isReadable(maps), "no " + maps + " to see which file was loaded");
                List<String> mapped = Files.readAllLines(maps).stream()
                        .filter(l -> l.contains(NativeGuard.LIBRARY + ".so"))
                        .map(l -> l.substring(l.indexOf('/')))
                        .distinct()
                        .toList();
                assertThat(mapped)
                        .as("files named %s.so mapped by backend %d", NativeGuard.LIBRARY, backendPid)
                        .containsExactly(copy.toString());
                assertThat(NativeGuard.loads(db)).isTrue();
            }
        }
    }

    private static String text(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            assertThat(rs.next()).as("a row from %s", sql).isTrue();
            return rs.getString(1);
        }
    }
}
