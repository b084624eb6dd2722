package dev.fenceline.spring;

import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Turns an error of a library builder ({@code "ttl must be between 2000ms and 3600000ms but was 1500ms"}) into one
 * about the {@code fenceline.} property that fed it ({@code "fenceline.election.ttl must be between ..."}). The
 * library's messages start with the builder's name for the value; {@code builderNames} maps those names to the
 * property names below {@code prefix}.
 */
final class PropertyNames {
    private final String prefix;
    private final Map<String, String> builderNames;

    PropertyNames(String prefix, Map<String, String> builderNames) {
        this.prefix = prefix;
        this.builderNames = builderNames;
    }

    /**
     * @param sameNames builder names whose property is their dashed form ({@code lockTimeout} -> {@code lock-timeout})
     * @param renamed   the others: builder name -> property name below {@code prefix}
     */
    static PropertyNames of(String prefix, List<String> sameNames, Map<String, String> renamed) {
        Map<String, String> all = new HashMap<>(renamed);
        sameNames.forEach(name -> all.put(name, dashed(name)));
        return new PropertyNames(prefix, Map.copyOf(all));
    }

    <T> T rethrow(Supplier<T> builder) {
        try {
            return builder.get();
        } catch (InvalidFencelinePropertyException e) {
            throw e;
        } catch (RuntimeException e) {
            throw translate(e);
        }
    }

    InvalidFencelinePropertyException translate(RuntimeException e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        // Longest first: "tlsClientCert key" before "tlsClientCert".
        return builderNames.keySet().stream()
                .sorted(Comparator.comparingInt(String::length).reversed())
                .filter(name -> message.equals(name) || message.startsWith(name + " "))
                .findFirst()
                .map(name -> {
                    String property = prefix + "." + builderNames.get(name);
                    String rest = message.substring(name.length());
                    if (rest.isEmpty()) {
                        return new InvalidFencelinePropertyException(property, property + " must be set", e);
                    }
                    // "ttl must be ..." reads as "fenceline.election.ttl must be ..."; a message about something
                    // else ("credentials need ...") keeps its words after the property name.
                    boolean sameThing = builderNames.get(name).equals(dashed(name));
                    return new InvalidFencelinePropertyException(
                            property, sameThing ? property + rest : property + ": " + message, e);
                })
                .orElseGet(() -> new InvalidFencelinePropertyException(prefix, prefix + ": " + message, e));
    }

    /** {@code retryBackoffMin} -> {@code retry-backoff-min}. */
    static String dashed(String camel) {
        StringBuilder b = new StringBuilder(camel.length() + 4);
        for (char c : camel.toCharArray()) {
            if (Character.isUpperCase(c)) {
                b.append('-').append(Character.toLowerCase(c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}
