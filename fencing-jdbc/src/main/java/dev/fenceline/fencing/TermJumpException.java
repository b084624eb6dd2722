package dev.fenceline.fencing;

import org.jspecify.annotations.Nullable;

/**
 * PostgreSQL refused a term further above the highest accepted one than {@code fencing.settings max_term_jump}
 * (SQLSTATE FL009): nothing was written and the mark did not move; the rejection is audited (reason
 * {@code term_jump}). Election terms move by small steps, so this means a misconfigured or forged term; an
 * administrator raises {@code max_term_jump} if the jump is intended.
 */
public final class TermJumpException extends FencingException {
    private static final long serialVersionUID = 1L;

    private final String resource;
    private final long offeredTerm;

    public TermJumpException(String resource, long offeredTerm, @Nullable String message, Throwable cause) {
        super(message, cause);
        this.resource = resource;
        this.offeredTerm = offeredTerm;
    }

    public String resource() {
        return resource;
    }

    public long offeredTerm() {
        return offeredTerm;
    }
}
