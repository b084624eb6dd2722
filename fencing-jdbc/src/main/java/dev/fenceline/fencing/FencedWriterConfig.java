package dev.fenceline.fencing;

import java.time.Duration;
import java.util.Objects;

/**
 * Validated writer settings. {@link #defaults()} suits most callers.
 *
 * <ul>
 *   <li>{@code maxPayloadBytes} (default 8192, 0..8192): largest {@link WriteDescription} payload accepted; larger
 *       ones fail up front with {@link IllegalArgumentException}, before anything is written. Matches the database
 *       cap {@code fencing.settings payload_max_bytes} (which truncates with a flag for SQL callers).</li>
 *   <li>{@code checkProtectedTables} (default true): a {@link WriteDescription}'s table must be protected for the
 *       token's resource, checked once per (resource, table) and cached.</li>
 *   <li>{@code connectionRecheckAttempts} (default 3, 1..10): after a lost connection, how many fresh connections to
 *       try when re-checking whether the term was deposed.</li>
 *   <li>{@code lockTimeout} (default 2s, 1ms..1h), {@code idleInTransactionSessionTimeout} (default 30s, 100ms..1h)
 *       and {@code statementTimeout} (default 0 = none, 0..1h): set for every transaction of the writer with
 *       {@code set_config(..., true)} in its first statement, so they hold whatever the server session carries (a
 *       pooler drops the connection's {@code options}, and another client may have left other values on a pooled
 *       server session) and nothing is left on the session. They replace, for the writer's transactions, the
 *       session's own values (e.g. those {@code DatabaseConfig} puts in the connection's {@code options}).</li>
 * </ul>
 */
public final class FencedWriterConfig {
    public static final int DB_PAYLOAD_CAP = 8192;

    private final int maxPayloadBytes;
    private final boolean checkProtectedTables;
    private final int connectionRecheckAttempts;
    private final Duration lockTimeout;
    private final Duration idleInTransactionSessionTimeout;
    private final Duration statementTimeout;

    private FencedWriterConfig(Builder b) {
        this.maxPayloadBytes = b.maxPayloadBytes;
        this.checkProtectedTables = b.checkProtectedTables;
        this.connectionRecheckAttempts = b.connectionRecheckAttempts;
        this.lockTimeout = b.lockTimeout;
        this.idleInTransactionSessionTimeout = b.idleInTransactionSessionTimeout;
        this.statementTimeout = b.statementTimeout;
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

    public int connectionRecheckAttempts() {
        return connectionRecheckAttempts;
    }

    public Duration lockTimeout() {
        return lockTimeout;
    }

    public Duration idleInTransactionSessionTimeout() {
        return idleInTransactionSessionTimeout;
    }

    /** {@code statement_timeout} of the writer's transactions; {@link Duration#ZERO} = none. */
    public Duration statementTimeout() {
        return statementTimeout;
    }

    @Override
    public String toString() {
        return "FencedWriterConfig{maxPayloadBytes=" + maxPayloadBytes + ", checkProtectedTables="
                + checkProtectedTables
                + ", connectionRecheckAttempts=" + connectionRecheckAttempts
                + ", lockTimeout=" + lockTimeout.toMillis() + "ms, idleInTransactionSessionTimeout="
                + idleInTransactionSessionTimeout.toMillis() + "ms, statementTimeout=" + statementTimeout.toMillis()
                + "ms}";
    }

    public static final class Builder {
        private int maxPayloadBytes = DB_PAYLOAD_CAP;
        private boolean checkProtectedTables = true;
        private int connectionRecheckAttempts = 3;
        private Duration lockTimeout = Duration.ofSeconds(2);
        private Duration idleInTransactionSessionTimeout = Duration.ofSeconds(30);
        private Duration statementTimeout = Duration.ZERO;

        private Builder() {}

        public Builder lockTimeout(Duration value) {
            this.lockTimeout = Objects.requireNonNull(value, "lockTimeout");
            return this;
        }

        public Builder idleInTransactionSessionTimeout(Duration value) {
            this.idleInTransactionSessionTimeout = Objects.requireNonNull(value, "idleInTransactionSessionTimeout");
            return this;
        }

        /** {@link Duration#ZERO} (the default) for none. */
        public Builder statementTimeout(Duration value) {
            this.statementTimeout = Objects.requireNonNull(value, "statementTimeout");
            return this;
        }

        public Builder maxPayloadBytes(int value) {
            this.maxPayloadBytes = value;
            return this;
        }

        public Builder checkProtectedTables(boolean value) {
            this.checkProtectedTables = value;
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
                throw new IllegalArgumentException(
                        "maxPayloadBytes cannot be greater than " + DB_PAYLOAD_CAP + ", was " + maxPayloadBytes);
            }
            if (connectionRecheckAttempts < 1 || connectionRecheckAttempts > 10) {
                throw new IllegalArgumentException(
                        "connectionRecheckAttempts must be between 1 and 10, was " + connectionRecheckAttempts);
            }
            between("lockTimeout", lockTimeout, Duration.ofMillis(1));
            between("idleInTransactionSessionTimeout", idleInTransactionSessionTimeout, Duration.ofMillis(100));
            between("statementTimeout", statementTimeout, Duration.ZERO);
            return new FencedWriterConfig(this);
        }

        private static void between(String property, Duration value, Duration min) {
            Duration max = Duration.ofHours(1);
            if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
                throw new IllegalArgumentException(property + " must be between " + min.toMillis() + "ms and "
                        + max.toMillis() + "ms, was " + value.toMillis() + "ms");
            }
        }
    }
}
