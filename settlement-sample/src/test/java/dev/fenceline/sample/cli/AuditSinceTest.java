package dev.fenceline.sample.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import org.junit.jupiter.api.Test;

class AuditSinceTest {
    @Test
    void acceptsInstantsOffsetsAndUtcDates() {
        assertThat(AuditCommand.parseSince("2026-11-30T17:00:00Z")).isEqualTo(Instant.parse("2026-11-30T17:00:00Z"));
        assertThat(AuditCommand.parseSince("2026-11-30T18:00:00+01:00"))
                .isEqualTo(Instant.parse("2026-11-30T17:00:00Z"));
        assertThat(AuditCommand.parseSince("2026-11-30")).isEqualTo(Instant.parse("2026-11-30T00:00:00Z"));
        assertThat(AuditCommand.parseSince(null)).isNull();
    }

    @Test
    void anythingElseIsBadInput() {
        assertThatThrownBy(() -> AuditCommand.parseSince("30/11/2026"))
                .isInstanceOf(BadInputException.class)
                .hasMessageContaining("--since must be an ISO-8601 instant or date");
    }
}
