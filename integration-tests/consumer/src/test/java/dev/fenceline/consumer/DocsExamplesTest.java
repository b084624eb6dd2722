package dev.fenceline.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every Java block in README.md and docs/*.md is a region of a source file that is compiled (the consumer project,
 * built against the published artifacts by {@link ConsumerProjectIT}). The line before the block names it:
 * {@code <!-- compiled from PATH#REGION -->}, PATH relative to the repository root, REGION marked in the file by
 * {@code // tag::REGION[]} and {@code // end::REGION[]}. A block that drifts from its source fails here.
 */
class DocsExamplesTest {
    private static final Pattern MARKER = Pattern.compile("<!-- compiled from (\\S+)#(\\S+) -->");
    private static final Path ROOT = Path.of(System.getProperty("fenceline.repo.root", "../.."))
            .toAbsolutePath()
            .normalize();

    @Test
    void everyJavaBlockInTheDocsIsARegionOfACompiledSourceFile() throws IOException {
        List<String> problems = new ArrayList<>();
        int blocks = 0;
        for (Path doc : documents()) {
            List<String> lines = Files.readAllLines(doc);
            for (int i = 0; i < lines.size(); i++) {
                if (!lines.get(i).strip().equals("```java")) {
                    continue;
                }
                blocks++;
                int end = i + 1;
                while (end < lines.size() && !lines.get(end).strip().equals("```")) {
                    end++;
                }
                String where = ROOT.relativize(doc) + ":" + (i + 1);
                Matcher marker = i > 0 ? MARKER.matcher(lines.get(i - 1).strip()) : null;
                if (marker == null || !marker.matches()) {
                    problems.add(
                            where + ": a Java block without '<!-- compiled from PATH#REGION -->' on the line before");
                } else {
                    String block = String.join("\n", lines.subList(i + 1, end));
                    String region = region(ROOT.resolve(marker.group(1)), marker.group(2), where, problems);
                    if (region != null && !region.equals(block)) {
                        problems.add(where + ": differs from " + marker.group(1) + "#" + marker.group(2)
                                + "\n--- docs ---\n" + block + "\n--- source ---\n" + region);
                    }
                }
                i = end;
            }
        }
        assertThat(problems).as("Java blocks in the docs").isEmpty();
        assertThat(blocks).as("Java blocks found (README's example at least)").isPositive();
    }

    private static List<Path> documents() throws IOException {
        List<Path> docs = new ArrayList<>();
        docs.add(ROOT.resolve("README.md"));
        try (Stream<Path> s = Files.list(ROOT.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        return docs;
    }

    /** The lines between the region's tags, with their common indentation removed. */
    static String region(Path file, String name, String where, List<String> problems) throws IOException {
        if (!Files.isRegularFile(file)) {
            problems.add(where + ": source " + file + " does not exist");
            return null;
        }
        List<String> lines = Files.readAllLines(file);
        int start = -1;
        int end = -1;
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i).strip();
            if (l.equals("// tag::" + name + "[]")) {
                start = i + 1;
            } else if (l.equals("// end::" + name + "[]")) {
                end = i;
            }
        }
        if (start < 0 || end < start) {
            problems.add(where + ": no region '" + name + "' (// tag::" + name + "[] ... // end::" + name + "[]) in "
                    + file);
            return null;
        }
        List<String> body = lines.subList(start, end);
        int indent = body.stream()
                .filter(l -> !l.isBlank())
                .mapToInt(l -> l.length() - l.stripLeading().length())
                .min()
                .orElse(0);
        List<String> out = new ArrayList<>();
        for (String l : body) {
            out.add(l.isBlank() ? "" : l.substring(indent));
        }
        return String.join("\n", out);
    }
}
