package dev.fenceline.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No main source file of a library module grows past 400 lines, and each top-level class opens with a Javadoc
 * sentence saying its job: a class that needs more is doing more than one job, and is split along its jobs, not by
 * size. Read from the sources of the repository this module is built in (the generated jOOQ code is not written by
 * hand and is left out).
 */
class LibraryClassSizeTest {
    private static final int MAX_LINES = 400;
    /**
     * The library's hand-written main sources. The two Spring Boot starters share spring-boot-starter/src/main/java;
     * each has its own directory for what differs between Boot generations.
     */
    private static final List<String> LIBRARY_SOURCE_ROOTS = List.of(
            "migrations/src/main/java",
            "db/src/main/java",
            "fencing-jdbc/src/main/java",
            "election/src/main/java",
            "leader-task/src/main/java",
            "spring-boot-starter/src/main/java",
            "spring-boot-starter/src/boot3/java",
            "spring-boot4-starter/src/main/java");

    /** The repository root: the architecture module lives two levels below it. */
    private static Path root() {
        Path here = Path.of("").toAbsolutePath();
        for (Path p = here; p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("fencing-jdbc")) && Files.isDirectory(p.resolve("election"))) {
                return p;
            }
        }
        throw new IllegalStateException("no repository root above " + here);
    }

    private static List<Path> mainSources() {
        Path root = root();
        return LIBRARY_SOURCE_ROOTS.stream()
                .map(root::resolve)
                .filter(Files::isDirectory)
                .flatMap(LibraryClassSizeTest::javaFiles)
                .toList();
    }

    private static Stream<Path> javaFiles(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(f -> f.toString().endsWith(".java")).toList().stream();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<String> lines(Path f) {
        try {
            return Files.readAllLines(f);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void noLibraryMainSourceFileIsLongerThanFourHundredLines() {
        List<Path> sources = mainSources();
        assertThat(sources).as("library main sources found").hasSizeGreaterThan(50);
        List<String> tooLong = sources.stream()
                .filter(f -> lines(f).size() > MAX_LINES)
                .map(f -> f + " (" + lines(f).size() + " lines)")
                .toList();
        assertThat(tooLong).as("files over %d lines", MAX_LINES).isEmpty();
    }

    @Test
    void everyLibraryClassOpensWithAJavadocSayingItsJob() {
        List<String> undocumented = mainSources().stream()
                .filter(f -> !f.getFileName().toString().equals("package-info.java"))
                .filter(f -> !f.getFileName().toString().equals("module-info.java"))
                .filter(f -> {
                    List<String> lines = lines(f);
                    int declaration = -1;
                    for (int i = 0; i < lines.size(); i++) {
                        String l = lines.get(i).strip();
                        if (l.matches("^(public |final |abstract |sealed |non-sealed )*"
                                + "(class|interface|enum|record|@interface) .*")) {
                            declaration = i;
                            break;
                        }
                    }
                    if (declaration < 0) {
                        return false;
                    }
                    // Between the comment's end and the declaration only annotations (no import's or package's ';').
                    for (int i = declaration - 1; i >= 0; i--) {
                        String l = lines.get(i).strip();
                        if (l.endsWith("*/")) {
                            return false;
                        }
                        if (l.endsWith(";")) {
                            return true;
                        }
                    }
                    return true;
                })
                .map(Path::toString)
                .toList();
        assertThat(undocumented)
                .as("classes without a Javadoc above their declaration")
                .isEmpty();
    }
}
