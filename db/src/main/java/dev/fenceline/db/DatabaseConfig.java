package dev.fenceline.db;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Validated settings for a pooled PostgreSQL {@link javax.sql.DataSource} whose connections are fit for fenced
 * writes. Build with {@link #builder(String)}; {@link Builder#build()} checks every value and names the property, the
 * limit and the offending value, HikariCP-style (e.g. {@code maximumPoolSize cannot be less than 1, was 0}).
 *
 * <p>Defaults and why:
 * <ul>
 *   <li>{@code lockTimeout} 2s: a fenced statement waiting on a row lock of a deposed leader fails instead of
 *       hanging (the deposed session is terminated by the next term's advance anyway).</li>
 *   <li>{@code idleInTransactionSessionTimeout} 30s: a leader paused inside an open transaction loses its session
 *       (and its locks) after this long even when no new term arrives.</li>
 *   <li>{@code statementTimeout} 0 (off), {@code maximumPoolSize} 10, {@code connectionTimeout} 5s,
 *       {@code applicationName} "fenceline" (shown in pg_stat_activity and in the rejection audit).</li>
 * </ul>
 */
public final class DatabaseConfig {
    static final Duration MAX_TIMEOUT = Duration.ofHours(1);

    private final String jdbcUrl;
    private final String username;
    private final @Nullable String password;
    private final int maximumPoolSize;
    private final int minimumIdle;
    private final Duration connectionTimeout;
    private final Duration lockTimeout;
    private final Duration idleInTransactionSessionTimeout;
    private final Duration statementTimeout;
    private final String applicationName;
    private final String poolName;

    /** Only from {@link Builder#build()}, with the values it has checked (the builder's may still be null). */
    private DatabaseConfig(
            Builder b,
            String jdbcUrl,
            String username,
            Duration connectionTimeout,
            Duration lockTimeout,
            Duration idleInTransactionSessionTimeout,
            Duration statementTimeout,
            String applicationName,
            String poolName) {
        this.jdbcUrl = jdbcUrl;
        this.username = username;
        this.password = b.password;
        this.maximumPoolSize = b.maximumPoolSize;
        this.minimumIdle = b.minimumIdle == null ? b.maximumPoolSize : b.minimumIdle;
        this.connectionTimeout = connectionTimeout;
        this.lockTimeout = lockTimeout;
        this.idleInTransactionSessionTimeout = idleInTransactionSessionTimeout;
        this.statementTimeout = statementTimeout;
        this.applicationName = applicationName;
        this.poolName = poolName;
    }

    /** {@code jdbcUrl} may be null here (to be set later); {@link Builder#build()} rejects a missing one. */
    public static Builder builder(@Nullable String jdbcUrl) {
        return new Builder(jdbcUrl);
    }

    public String jdbcUrl() {
        return jdbcUrl;
    }

    public String username() {
        return username;
    }

    /** May be null (trust / .pgpass / other auth). */
    public @Nullable String password() {
        return password;
    }

    public int maximumPoolSize() {
        return maximumPoolSize;
    }

    public int minimumIdle() {
        return minimumIdle;
    }

    public Duration connectionTimeout() {
        return connectionTimeout;
    }

    public Duration lockTimeout() {
        return lockTimeout;
    }

    public Duration idleInTransactionSessionTimeout() {
        return idleInTransactionSessionTimeout;
    }

    public Duration statementTimeout() {
        return statementTimeout;
    }

    public String applicationName() {
        return applicationName;
    }

    public String poolName() {
        return poolName;
    }

    @Override
    public String toString() {
        return "DatabaseConfig{jdbcUrl=" + jdbcUrl + ", username=" + username + ", maximumPoolSize=" + maximumPoolSize
                + ", minimumIdle=" + minimumIdle + ", connectionTimeout=" + connectionTimeout.toMillis() + "ms"
                + ", lockTimeout=" + lockTimeout.toMillis() + "ms, idleInTransactionSessionTimeout="
                + idleInTransactionSessionTimeout.toMillis() + "ms, statementTimeout=" + statementTimeout.toMillis()
                + "ms, applicationName=" + applicationName + ", poolName=" + poolName + "}";
    }

    /**
     * Mutable builder; not thread-safe. Its setters take null (a configuration source may not have the value);
     * {@link #build()} rejects a null where a value is required, naming the property, and only a password may stay
     * null.
     */
    public static final class Builder {
        private @Nullable String jdbcUrl;
        private @Nullable String username = "postgres";
        private @Nullable String password;
        private int maximumPoolSize = 10;
        private @Nullable Integer minimumIdle;
        private @Nullable Duration connectionTimeout = Duration.ofSeconds(5);
        private @Nullable Duration lockTimeout = Duration.ofSeconds(2);
        private @Nullable Duration idleInTransactionSessionTimeout = Duration.ofSeconds(30);
        private @Nullable Duration statementTimeout = Duration.ZERO;
        private @Nullable String applicationName = "fenceline";
        private @Nullable String poolName = "fenceline";

        private Builder(@Nullable String jdbcUrl) {
            this.jdbcUrl = jdbcUrl;
        }

        public Builder jdbcUrl(@Nullable String value) {
            this.jdbcUrl = value;
            return this;
        }

        public Builder username(@Nullable String value) {
            this.username = value;
            return this;
        }

        public Builder password(@Nullable String value) {
            this.password = value;
            return this;
        }

        public Builder maximumPoolSize(int value) {
            this.maximumPoolSize = value;
            return this;
        }

        /** Defaults to {@code maximumPoolSize} (a fixed-size pool, as HikariCP recommends). */
        public Builder minimumIdle(int value) {
            this.minimumIdle = value;
            return this;
        }

        public Builder connectionTimeout(@Nullable Duration value) {
            this.connectionTimeout = value;
            return this;
        }

        public Builder lockTimeout(@Nullable Duration value) {
            this.lockTimeout = value;
            return this;
        }

        public Builder idleInTransactionSessionTimeout(@Nullable Duration value) {
            this.idleInTransactionSessionTimeout = value;
            return this;
        }

        /** 0 disables it (the default). */
        public Builder statementTimeout(@Nullable Duration value) {
            this.statementTimeout = value;
            return this;
        }

        public Builder applicationName(@Nullable String value) {
            this.applicationName = value;
            return this;
        }

        public Builder poolName(@Nullable String value) {
            this.poolName = value;
            return this;
        }

        /** @throws IllegalArgumentException naming the property, the limit and the value */
        public DatabaseConfig build() {
            if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql:")) {
                throw new IllegalArgumentException("jdbcUrl must start with jdbc:postgresql:, was " + jdbcUrl);
            }
            if (username == null || username.isBlank() || username.length() > 63) {
                throw new IllegalArgumentException("username must be 1 to 63 characters, was '" + username + "'");
            }
            atLeast("maximumPoolSize", maximumPoolSize, 1);
            atMost("maximumPoolSize", maximumPoolSize, 1000);
            if (minimumIdle != null) {
                atLeast("minimumIdle", minimumIdle, 0);
                if (minimumIdle > maximumPoolSize) {
                    throw new IllegalArgumentException("minimumIdle cannot be greater than maximumPoolSize ("
                            + maximumPoolSize + "), was " + minimumIdle);
                }
            }
            Duration connect =
                    between("connectionTimeout", connectionTimeout, Duration.ofMillis(250), Duration.ofMinutes(5));
            Duration lock = between("lockTimeout", lockTimeout, Duration.ofMillis(1), MAX_TIMEOUT);
            Duration idleInTransaction = between(
                    "idleInTransactionSessionTimeout",
                    idleInTransactionSessionTimeout,
                    Duration.ofMillis(100),
                    MAX_TIMEOUT);
            Duration statement = between("statementTimeout", statementTimeout, Duration.ZERO, MAX_TIMEOUT);
            String application = printable("applicationName", applicationName, 63);
            String pool = printable("poolName", poolName, 100);
            return new DatabaseConfig(
                    this, jdbcUrl, username, connect, lock, idleInTransaction, statement, application, pool);
        }

        private static void atLeast(String property, int value, int min) {
            if (value < min) {
                throw new IllegalArgumentException(property + " cannot be less than " + min + ", was " + value);
            }
        }

        private static void atMost(String property, int value, int max) {
            if (value > max) {
                throw new IllegalArgumentException(property + " cannot be greater than " + max + ", was " + value);
            }
        }

        /** @return {@code value}, checked */
        private static Duration between(String property, @Nullable Duration value, Duration min, Duration max) {
            Objects.requireNonNull(value, property);
            if (value.compareTo(min) < 0) {
                throw new IllegalArgumentException(
                        property + " cannot be less than " + min.toMillis() + "ms, was " + value.toMillis() + "ms");
            }
            if (value.compareTo(max) > 0) {
                throw new IllegalArgumentException(
                        property + " cannot be greater than " + max.toMillis() + "ms, was " + value.toMillis() + "ms");
            }
            return value;
        }

        /** @return {@code value}, checked */
        private static String printable(String property, @Nullable String value, int maxLength) {
            if (value == null || value.isBlank()) {
                throw new IllegalArgumentException(property + " must not be blank, was '" + value + "'");
            }
            if (value.length() > maxLength) {
                throw new IllegalArgumentException(
                        property + " cannot be longer than " + maxLength + " characters, was " + value.length());
            }
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c < 0x20 || c > 0x7e) {
                    throw new IllegalArgumentException(property + " must be printable ASCII, was '" + value + "'");
                }
            }
            return value;
        }
    }
}
