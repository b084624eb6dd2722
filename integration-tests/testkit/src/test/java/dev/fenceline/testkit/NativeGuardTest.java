package dev.fenceline.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Finding the built native guard and copying it only for the major version it was built for (files only). */
class NativeGuardTest {
    @TempDir
    Path tmp;

    private Path build(int major) throws Exception {
        Path library = tmp.resolve("repo").resolve(NativeGuard.BUILT_LIBRARY);
        Files.createDirectories(library.getParent());
        Files.writeString(library, "library built for " + major);
        Files.writeString(NativeGuard.majorMarker(library), major + "\n");
        return library;
    }

    @Test
    void builtLibraryIsFoundFromAFolderBelowTheRepositoryRoot() throws Exception {
        Path library = build(15);
        Path module = Files.createDirectories(tmp.resolve("repo/integration-tests/testkit"));
        assertThat(NativeGuard.findBuiltLibrary(module)).isEqualTo(library);
        assertThat(NativeGuard.findBuiltLibrary(tmp.resolve("elsewhere"))).isNull();
    }

    @Test
    void libraryForTheServersMajorIsCopiedUnderItsLibraryName() throws Exception {
        Path library = build(15);
        Path copy = NativeGuard.stage(library, 15, tmp.resolve("server/lib"));
        assertThat(copy).isEqualTo(tmp.resolve("server/lib/fenceline_guard.so"));
        assertThat(Files.mismatch(copy, library)).isEqualTo(-1L);
    }

    @Test
    void libraryForAnotherMajorOrWithoutMarkerIsNotCopied() throws Exception {
        Path library = build(14);
        assertThat(NativeGuard.stage(library, 15, tmp.resolve("a"))).isNull();
        assertThat(tmp.resolve("a/fenceline_guard.so")).doesNotExist();

        Files.delete(NativeGuard.majorMarker(library));
        assertThat(NativeGuard.builtForMajor(library)).isEqualTo(-1);
        assertThat(NativeGuard.stage(library, 14, tmp.resolve("b"))).isNull();
        assertThat(tmp.resolve("b/fenceline_guard.so")).doesNotExist();
    }

    @Test
    void markerSitsNextToTheLibrary() {
        assertThat(NativeGuard.majorMarker(Path.of("/x/target/fenceline_guard.so")))
                .isEqualTo(Path.of("/x/target/fenceline_guard.pg-major"));
    }
}
