package dev.fenceline.fencing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Input validation that happens before anything reaches PostgreSQL (no server needed). */
class InputValidationTest {

    @Test
    void tokenKeepsValidValues() {
        FencingToken t = FencingToken.of("settlement.eu-1:a_b", 42, "worker-7");
        assertThat(t.resource()).isEqualTo("settlement.eu-1:a_b");
        assertThat(t.term()).isEqualTo(42);
        assertThat(t.leaderId()).isEqualTo("worker-7");
        assertThat(t).isEqualTo(FencingToken.of("settlement.eu-1:a_b", 42L, "worker-7"));
    }

    @Test
    void tokenRejectsNonPositiveAndNullTerms() {
        assertThatThrownBy(() -> FencingToken.of("r", 0)).hasMessage("term must be positive, was 0");
        assertThatThrownBy(() -> FencingToken.of("r", Long.MIN_VALUE)).hasMessageStartingWith("term must be positive");
        assertThatThrownBy(() -> FencingToken.of("r", (Long) null, null)).hasMessage("term must be positive, was null");
    }

    @Test
    void tokenRejectsOversizedOrBlankLeaderIds() {
        assertThatThrownBy(() -> FencingToken.of("r", 1, "x".repeat(201)))
                .hasMessage("leaderId must be null or 1 to 200 non-blank characters, was 201 characters");
        assertThatThrownBy(() -> FencingToken.of("r", 1, " ")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void longResourceNamesAreAbbreviatedInTheMessage() {
        assertThatThrownBy(() -> FencingToken.of("x".repeat(500), 1))
                .hasMessageEndingWith("...'")
                .message()
                .hasSizeLessThan(250);
    }

    @Test
    void writeDescriptionNormalisesOperationAndMeasuresPayloadInUtf8Bytes() {
        WriteDescription d = WriteDescription.of("settlement.payment", " upsert ", "k-1", "{\"note\":\"€\"}");
        assertThat(d.operation()).isEqualTo("UPSERT");
        assertThat(d.payloadBytes()).isEqualTo(14);
    }

    @Test
    void writeDescriptionRejectsTrailingJsonAndOversizedKeys() {
        assertThatThrownBy(() -> WriteDescription.of("t", "INSERT", null, "{} {}"))
                .hasMessageContaining("single JSON document");
        assertThatThrownBy(() -> WriteDescription.of("t", "INSERT", "k".repeat(501), null))
                .hasMessage("businessKey cannot be longer than 500 characters, was 501");
    }

    @Test
    void writerConfigIsValidatedNamingPropertyLimitAndValue() {
        assertThatThrownBy(
                        () -> FencedWriterConfig.builder().maxPayloadBytes(-1).build())
                .hasMessage("maxPayloadBytes cannot be less than 0, was -1");
        assertThatThrownBy(() -> FencedWriterConfig.builder()
                        .connectionRecheckAttempts(0)
                        .build())
                .hasMessage("connectionRecheckAttempts must be between 1 and 10, was 0");
        assertThat(FencedWriterConfig.defaults().maxPayloadBytes()).isEqualTo(8192);
        assertThatThrownBy(() -> FencedWriterConfig.builder()
                        .statementTimeout(java.time.Duration.ofMillis(-1))
                        .build())
                .hasMessage("statementTimeout must be between 0ms and 3600000ms, was -1ms");
        assertThatThrownBy(() -> FencedWriterConfig.builder()
                        .lockTimeout(java.time.Duration.ZERO)
                        .build())
                .hasMessage("lockTimeout must be between 1ms and 3600000ms, was 0ms");
        assertThat(FencedWriterConfig.defaults().statementTimeout())
                .as("statementTimeout default: none")
                .isZero();
    }

    @Test
    void writerNeedsADataSourceAndConfig() {
        assertThatThrownBy(() -> FencedWriter.create(null, FencedWriterConfig.defaults()))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("dataSource");
    }
}
