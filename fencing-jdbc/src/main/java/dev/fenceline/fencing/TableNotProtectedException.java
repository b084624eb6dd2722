package dev.fenceline.fencing;

import org.jspecify.annotations.Nullable;

/** A {@link WriteDescription} names a table that is not protected for the token's resource. Nothing written. */
public final class TableNotProtectedException extends FencingException {
    private static final long serialVersionUID = 1L;
    private final String table;
    private final String resource;

    public TableNotProtectedException(String table, String resource, @Nullable String protectedFor) {
        super(
                protectedFor == null
                        ? "table " + table + " is not protected (fencing.protect_table('" + table + "', '" + resource
                                + "'))"
                        : "table " + table + " is protected for resource " + protectedFor + ", not " + resource,
                null);
        this.table = table;
        this.resource = resource;
    }

    public String table() {
        return table;
    }

    public String resource() {
        return resource;
    }
}
