package dev.fenceline.sample.settlement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class IdempotencyKeyTest {
    @Test
    void sameSetOfPaymentsGivesTheSameKeyWhateverTheOrder() {
        assertThat(IdempotencyKey.of(List.of(3L, 1L, 2L))).isEqualTo(IdempotencyKey.of(1L, 2L, 3L));
        assertThat(IdempotencyKey.of(1L, 2L, 2L, 3L)).isEqualTo(IdempotencyKey.of(1L, 2L, 3L));
    }

    @Test
    void differentSetsGiveDifferentKeys() {
        assertThat(IdempotencyKey.of(1L, 2L, 3L)).isNotEqualTo(IdempotencyKey.of(1L, 2L, 4L));
        // no ambiguity between "1,23" and "12,3"
        assertThat(IdempotencyKey.of(1L, 23L)).isNotEqualTo(IdempotencyKey.of(12L, 3L));
    }

    @Test
    void keyIsSha256OfTheSortedDecimalIdsSoOperatorsCanRecomputeItInSql() {
        // echo -n "1,2,3" | sha256sum ; in SQL: 'sha256:' || encode(sha256('1,2,3'), 'hex')
        assertThat(IdempotencyKey.of(3L, 2L, 1L))
                .isEqualTo("sha256:8a6ae15122001229edb8866f56e342af12ae8187203c3e3b33931743e7c0c48d");
    }

    @Test
    void emptyOrNonPositiveIdsAreRefused() {
        assertThatThrownBy(() -> IdempotencyKey.of(List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least one payment");
        assertThatThrownBy(() -> IdempotencyKey.of(0L, 1L))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("positive");
    }
}
