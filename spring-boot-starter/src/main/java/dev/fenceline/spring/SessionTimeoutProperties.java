package dev.fenceline.spring;

import java.time.Duration;

/**
 * The two timeouts every fenced session needs (a write waiting on a deposed leader's row lock fails instead of
 * hanging; a leader paused inside a transaction loses it): set on every session of Fenceline's own pool
 * ({@code fenceline.datasource.*}), and by the writer for each of its transactions ({@code fenceline.writer.*}).
 */
public abstract class SessionTimeoutProperties {
    /** lock_timeout, 1ms to 1h (writer: set for each of its transactions). */
    private Duration lockTimeout = Duration.ofSeconds(2);

    /** idle_in_transaction_session_timeout, 100ms to 1h (writer: set for each of its transactions). */
    private Duration idleInTransactionSessionTimeout = Duration.ofSeconds(30);

    public Duration getLockTimeout() {
        return lockTimeout;
    }

    public void setLockTimeout(Duration lockTimeout) {
        this.lockTimeout = lockTimeout;
    }

    public Duration getIdleInTransactionSessionTimeout() {
        return idleInTransactionSessionTimeout;
    }

    public void setIdleInTransactionSessionTimeout(Duration idleInTransactionSessionTimeout) {
        this.idleInTransactionSessionTimeout = idleInTransactionSessionTimeout;
    }
}
