package dev.fenceline.fencing;

import org.jspecify.annotations.Nullable;

/** The resource has no high-water mark: register it with {@code fencing.register_resource(...)}. Nothing written. */
public final class UnknownResourceException extends FencingException {
    private static final long serialVersionUID = 1L;
    private final String resource;

    public UnknownResourceException(String resource, @Nullable Throwable cause) {
        super(
                "unknown fencing resource '" + resource + "': register it first (SELECT fencing.register_resource('"
                        + resource + "') or FencedWriter.registerResource)",
                cause);
        this.resource = resource;
    }

    public String resource() {
        return resource;
    }
}
