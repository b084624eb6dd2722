package dev.fenceline.fencing;

/**
 * Validated writer settings. {@link #defaults()} suits most callers.
 *
 * <ul>
 *   <li>{@code maxPayloadBytes} (default 8192, 0..8192): largest {@link WriteDescription} payload accepted; larger
 *       ones fail up front with {@link IllegalArgumentException}, before anything is written. Matches the database
 *       cap {@code fencing.settings payload_max_bytes} (which truncates with a flag for SQL callers).</li>
 *   <li>{@code checkProtectedTables} (default true): a {@link WriteDescription}'s table must be protected for the
 *       token's resource, checked once per (resource, table) and cached.</li>
 *   <li>{@code stampTransactionTerm} (default false): also {@code SET LOCAL fencing.term} in every transaction
 *       (one more round trip). Not needed for safety: the session fence already decides; useful when other code
 *       on the same connections relies on {@code fencing.term}.</li>
 *   <li>{@code connectionRecheckAttempts} (default 3, 1..10): after a lost connection, how many fresh connections to
 *       try when re-checking whether the term was deposed.</li>
 * </ul>
 */
public final class FencedWriterConfig {
    public static final int DB_PAYLOAD_CAP = 8192;

    private final int maxPayloadBytes;
    private final boolean checkProtectedTables;
    private final boolean stampTransactionTerm;
    private final int connectionRecheckAttempts;

    private FencedWriterConfig(Builder b) {
        this.maxPayloadBytes = b.maxPayloadBytes;
        this.checkProtectedTables = b.checkProtectedTables;
        this.stampTransactionTerm = b.stampTransactionTerm;
        this.connectionRecheckAttempts = b.connectionRecheckAttempts;
    }

    public static FencedWriterConfig defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public int maxPayloadBytes() {
        return maxPayloadBytes;
    }

    public boolean checkProtectedTables() {
        return checkProtectedTables;
    }

    public boolean stampTransactionTerm() {
        return stampTransactionTerm;
    }

    public int connectionRecheckAttempts() {
        return connectionRecheckAttempts;
    }

    @Override
    public String toString() {
        return "FencedWriterConfig{maxPayloadBytes=" + maxPayloadBytes + ", checkProtectedTables="
                + checkProtectedTables + ", stampTransactionTerm=" + stampTransactionTerm
                + ", connectionRecheckAttempts=" + connectionRecheckAttempts + "}";
    }

    public static final class Builder {
        private int maxPayloadBytes = DB_PAYLOAD_CAP;
        private boolean checkProtectedTables = true;
        private boolean stampTransactionTerm;
        private int connectionRecheckAttempts = 3;

        private Builder() {
        }

        public Builder maxPayloadBytes(int value) {
            this.maxPayloadBytes = value;
            return this;
        }

        public Builder checkProtectedTables(boolean value) {
            this.checkProtectedTables = value;
            return this;
        }

        public Builder stampTransactionTerm(boolean value) {
            this.stampTransactionTerm = value;
            return this;
        }

        public Builder connectionRecheckAttempts(int value) {
            this.connectionRecheckAttempts = value;
            return this;
        }

        /** @throws IllegalArgumentException naming the property, the limit and the value */
        public FencedWriterConfig build() {
            if (maxPayloadBytes < 0) {
                throw new IllegalArgumentException("maxPayloadBytes cannot be less than 0, was " + maxPayloadBytes);
            }
            if (maxPayloadBytes > DB_PAYLOAD_CAP) {
                throw new IllegalArgumentException("maxPayloadBytes cannot be greater than " + DB_PAYLOAD_CAP
                        + ", was " + maxPayloadBytes);
            }
            if (connectionRecheckAttempts < 1 || connectionRecheckAttempts > 10) {
                throw new IllegalArgumentException("connectionRecheckAttempts must be between 1 and 10, was "
                        + connectionRecheckAttempts);
            }
            return new FencedWriterConfig(this);
        }
    }
}
