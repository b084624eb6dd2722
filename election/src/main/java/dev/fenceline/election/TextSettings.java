package dev.fenceline.election;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Reads settings given as text, as environment variables and command-line options give them: lists, durations
 * and password files, each failure naming the setting and the value.
 */
final class TextSettings {
    private TextSettings() {}

    /** Gives {@code apply} the value of {@code name} in {@code env}; an absent variable changes nothing. */
    static void ifSet(Map<String, String> env, String name, Consumer<String> apply) {
        String value = env.get(name);
        if (value != null) {
            apply.accept(value);
        }
    }

    /** The non-blank items of a comma-separated list, trimmed; none for null. */
    static List<String> csv(@Nullable String csv) {
        List<String> list = new ArrayList<>();
        if (csv != null) {
            for (String s : csv.split(",", -1)) { // empty items, trailing ones too, are skipped below
                if (!s.isBlank()) {
                    list.add(s.trim());
                }
            }
        }
        return list;
    }

    /**
     * The password in {@code file}: its first line, without the line end (as etcdctl and most secret mounts have
     * it). @throws ElectionException naming {@code what} and the path when it cannot be read
     */
    static String readPasswordFile(String what, Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (IOException | SecurityException e) {
            throw new ElectionException(what + " must name a readable file but '" + file + "' is not readable ("
                    + e.getClass().getSimpleName() + ")");
        }
        if (lines.isEmpty() || lines.get(0).isEmpty()) {
            throw new ElectionException(
                    what + " must name a file whose first line is the password but '" + file + "' has none");
        }
        return lines.get(0);
    }

    /** {@code 10s}, {@code 5000ms}, {@code 2m} or ISO-8601 ({@code PT10S}). @throws ElectionException otherwise */
    static Duration parseDuration(String what, String text) {
        String t = text.trim();
        try {
            if (t.startsWith("P") || t.startsWith("p")) {
                return Duration.parse(t);
            }
            if (t.endsWith("ms")) {
                return Duration.ofMillis(
                        Long.parseLong(t.substring(0, t.length() - 2).trim()));
            }
            if (t.endsWith("s")) {
                return Duration.ofSeconds(
                        Long.parseLong(t.substring(0, t.length() - 1).trim()));
            }
            if (t.endsWith("m")) {
                return Duration.ofMinutes(
                        Long.parseLong(t.substring(0, t.length() - 1).trim()));
            }
        } catch (RuntimeException e) {
            // fall through to the message below
        }
        throw new ElectionException(what + " must be a duration like 10s, 5000ms, 2m or PT10S but was '" + text + "'");
    }
}
