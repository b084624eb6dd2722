package dev.fenceline.db.build;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The jOOQ classes under {@code src/main/generated} are committed so that building the library needs no PostgreSQL.
 * This test keeps them honest: it migrates a throwaway PostgreSQL and regenerates exactly as
 * {@code -Pjooq-codegen} does, and fails on any file that is missing, extra or different.
 */
class GeneratedSourcesMatchMigrationsIT {

    @Test
    void regeneratingFromTheMigrationsReproducesTheCommittedClasses(@TempDir Path fresh) throws Exception {
        Path committed =
                Path.of(System.getProperty("basedir", "")).toAbsolutePath().resolve("src/main/generated");
        assertThat(committed.resolve(GenerateJooq.PACKAGE.replace('.', '/'))).isDirectory();

        GenerateJooq.generateWithThrowawayServer(fresh);

        Map<String, String> expected = filesUnder(fresh);
        Map<String, String> actual = filesUnder(committed);
        List<String> differences = new ArrayList<>();
        for (String name : expected.keySet()) {
            if (!actual.containsKey(name)) {
                differences.add("missing: " + name);
            } else if (!actual.get(name).equals(expected.get(name))) {
                differences.add("differs: " + name);
            }
        }
        for (String name : actual.keySet()) {
            if (!expected.containsKey(name)) {
                differences.add("not generated any more: " + name);
            }
        }
        assertThat(expected).as("generated files").isNotEmpty();
        assertThat(differences)
                .as("db/src/main/generated is out of date with the migrations; regenerate with"
                        + " `mvn -B -ntp -pl db -am process-test-classes -Pjooq-codegen` and commit the result")
                .isEmpty();
    }

    private static Map<String, String> filesUnder(Path root) throws IOException {
        Map<String, String> files = new TreeMap<>();
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : (Iterable<Path>) paths.filter(Files::isRegularFile)::iterator) {
                files.put(root.relativize(p).toString(), Files.readString(p));
            }
        }
        return files;
    }
}
