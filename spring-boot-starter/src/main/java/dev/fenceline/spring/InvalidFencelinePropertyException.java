package dev.fenceline.spring;

/**
 * A {@code fenceline.*} property that the library rejected. The message names the property, the limit and the value,
 * e.g. {@code fenceline.election.ttl must be between 2000ms and 3600000ms but was 1500ms}.
 */
public class InvalidFencelinePropertyException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String property;

    public InvalidFencelinePropertyException(String property, String message, Throwable cause) {
        super(message, cause);
        this.property = property;
    }

    /** The full property name, e.g. {@code fenceline.election.ttl}. */
    public String property() {
        return property;
    }

    /** The property's path on {@link FencelineProperties}, e.g. {@code election.ttl}, {@code election.candidateId}. */
    String beanPath() {
        String path = property.substring("fenceline.".length());
        StringBuilder camel = new StringBuilder(path.length());
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c == '-' && i + 1 < path.length()) {
                camel.append(Character.toUpperCase(path.charAt(++i)));
            } else {
                camel.append(c);
            }
        }
        return camel.toString();
    }
}
