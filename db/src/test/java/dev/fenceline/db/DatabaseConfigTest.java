package dev.fenceline.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DatabaseConfigTest {
    private static final String URL = "jdbc:postgresql://127.0.0.1:5432/app";

    @Test
    void defaultsAreFitForFencedWrites() {
        DatabaseConfig c = DatabaseConfig.builder(URL).build();
        assertThat(c.lockTimeout()).isEqualTo(Duration.ofSeconds(2));
        assertThat(c.idleInTransactionSessionTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(c.minimumIdle()).isEqualTo(c.maximumPoolSize());
        assertThat(Databases.startupOptions(c))
                .isEqualTo("-c lock_timeout=2000 -c idle_in_transaction_session_timeout=30000 -c statement_timeout=0");
    }

    @Test
    void poolSizeBelowOneIsRejectedNamingPropertyLimitAndValue() {
        assertThatThrownBy(() -> DatabaseConfig.builder(URL).maximumPoolSize(0).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maximumPoolSize cannot be less than 1, was 0");
    }

    @Test
    void minimumIdleAbovePoolSizeIsRejected() {
        assertThatThrownBy(() -> DatabaseConfig.builder(URL)
                        .maximumPoolSize(4)
                        .minimumIdle(5)
                        .build())
                .hasMessage("minimumIdle cannot be greater than maximumPoolSize (4), was 5");
    }

    @Test
    void zeroLockTimeoutIsRejectedBecauseFencedWritesMustNotWaitForever() {
        assertThatThrownBy(() ->
                        DatabaseConfig.builder(URL).lockTimeout(Duration.ZERO).build())
                .hasMessage("lockTimeout cannot be less than 1ms, was 0ms");
    }

    @Test
    void hugeIdleInTransactionTimeoutIsRejected() {
        assertThatThrownBy(() -> DatabaseConfig.builder(URL)
                        .idleInTransactionSessionTimeout(Duration.ofHours(2))
                        .build())
                .hasMessage("idleInTransactionSessionTimeout cannot be greater than 3600000ms, was 7200000ms");
    }

    @Test
    void nonPostgresUrlIsRejected() {
        assertThatThrownBy(() -> DatabaseConfig.builder("jdbc:mysql://x/y").build())
                .hasMessage("jdbcUrl must start with jdbc:postgresql:, was jdbc:mysql://x/y");
    }

    @Test
    void applicationNameWithControlCharactersIsRejected() {
        assertThatThrownBy(() ->
                        DatabaseConfig.builder(URL).applicationName("a\nb").build())
                .hasMessageStartingWith("applicationName must be printable ASCII");
    }
}
