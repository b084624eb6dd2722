package dev.fenceline.fencing;

import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The right to write a resource under a term: what a leader presents to PostgreSQL with every fenced transaction.
 * Immutable; validated on construction (nothing reaches the database with a bad token).
 */
public final class FencingToken {
    /** Same rule as the CHECK constraint on {@code fencing.high_water_mark.resource}. */
    static final Pattern RESOURCE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,62}");

    static final int MAX_LEADER_ID_LENGTH = 200;

    private final String resource;
    private final long term;
    private final @Nullable String leaderId;

    private FencingToken(String resource, long term, @Nullable String leaderId) {
        this.resource = resource;
        this.term = term;
        this.leaderId = leaderId;
    }

    /**
     * @param resource 1 to 63 characters of {@code [A-Za-z0-9._:-]}, starting with a letter or digit
     * @param term     a positive term (e.g. the election's term)
     * @param leaderId who holds the term, for the audit; may be null, at most 200 characters
     * @throws IllegalArgumentException on any invalid argument, naming it and the value
     */
    public static FencingToken of(String resource, long term, @Nullable String leaderId) {
        checkResource(resource);
        if (term <= 0) {
            throw new IllegalArgumentException("term must be positive, was " + term);
        }
        if (leaderId != null && (leaderId.length() > MAX_LEADER_ID_LENGTH || leaderId.isBlank())) {
            throw new IllegalArgumentException("leaderId must be null or 1 to " + MAX_LEADER_ID_LENGTH
                    + " non-blank characters, was " + leaderId.length() + " characters");
        }
        return new FencingToken(resource, term, leaderId);
    }

    /** A token without a leader id. */
    public static FencingToken of(String resource, long term) {
        return of(resource, term, null);
    }

    /** A boxed term (from configuration, JSON, ...): null is rejected like any other invalid term. */
    public static FencingToken of(String resource, @Nullable Long term, @Nullable String leaderId) {
        if (term == null) {
            throw new IllegalArgumentException("term must be positive, was null");
        }
        return of(resource, term.longValue(), leaderId);
    }

    static void checkResource(String resource) {
        if (resource == null || !RESOURCE.matcher(resource).matches()) {
            throw new IllegalArgumentException("resource must be 1 to 63 characters of [A-Za-z0-9._:-] starting with"
                    + " a letter or digit, was " + (resource == null ? "null" : "'" + abbreviate(resource) + "'"));
        }
    }

    static String abbreviate(String s) {
        return s.length() <= 80 ? s : s.substring(0, 77) + "...";
    }

    public String resource() {
        return resource;
    }

    public long term() {
        return term;
    }

    /** May be null. */
    public @Nullable String leaderId() {
        return leaderId;
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof FencingToken t
                && t.term == term
                && t.resource.equals(resource)
                && Objects.equals(t.leaderId, leaderId);
    }

    @Override
    public int hashCode() {
        return Objects.hash(resource, term, leaderId);
    }

    @Override
    public String toString() {
        return "FencingToken{" + resource + "@" + term + (leaderId == null ? "" : ", leader=" + leaderId) + "}";
    }
}
