package dev.fenceline.fencing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** What a consumer can reach: one exported package, and in it only the writer's API types are public. */
class PublicSurfaceTest {
    private static final Path CLASSES =
            Path.of(System.getProperty("basedir", "")).toAbsolutePath().resolve("target/classes");

    @Test
    void theModuleExportsOnlyTheApiPackage() throws IOException {
        ModuleDescriptor descriptor;
        try (InputStream in = Files.newInputStream(CLASSES.resolve("module-info.class"))) {
            descriptor = ModuleDescriptor.read(in);
        }
        assertThat(descriptor.name()).isEqualTo("dev.fenceline.fencing");
        assertThat(descriptor.exports())
                .extracting(ModuleDescriptor.Exports::source)
                .containsExactly("dev.fenceline.fencing");
        assertThat(descriptor.exports()).allMatch(e -> !e.isQualified());
    }

    @Test
    void onlyTheWritersApiTypesArePublicAndItsMachineryIsNot() throws Exception {
        Set<String> publicTypes = new TreeSet<>();
        try (Stream<Path> files = Files.list(CLASSES.resolve("dev/fenceline/fencing"))) {
            for (Path f : files.filter(p ->
                            p.toString().endsWith(".class") && !p.toString().contains("$"))
                    .collect(Collectors.toList())) {
                String name = f.getFileName().toString().replace(".class", "");
                if (name.equals("package-info")) {
                    continue;
                }
                if (Modifier.isPublic(
                        Class.forName("dev.fenceline.fencing." + name).getModifiers())) {
                    publicTypes.add(name);
                }
            }
        }
        assertThat(publicTypes)
                .containsExactlyInAnyOrder(
                        "CommitOutcomeUnknownException",
                        "FenceUnavailableException",
                        "FencedAction",
                        "FencedContext",
                        "FencedWork",
                        "FencedWorkException",
                        "FencedWriter",
                        "FencedWriterConfig",
                        "FencingException",
                        "FencingToken",
                        "NotFencedException",
                        "StaleTermException",
                        "TableNotProtectedException",
                        "TermJumpException",
                        "UnknownResourceException",
                        "WriteDescription");
        assertThat(Modifier.isPublic(WriterEngine.class.getModifiers())).isFalse();
    }
}
