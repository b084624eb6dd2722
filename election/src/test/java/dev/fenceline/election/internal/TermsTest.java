package dev.fenceline.election.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Checked term arithmetic: terms never wrap around, absurd floors are refused with a clear message. */
class TermsTest {

    @ParameterizedTest(name = "last={0} floor={1} -> {2}")
    @CsvSource({
        "0, 0, 1",
        "0, 5, 5",
        "7, 0, 8",
        "7, 3, 8",
        "7, 100, 100",
        "9007199254740990, 0, 9007199254740991", // MAX_TERM - 1 -> MAX_TERM, the last issuable term
    })
    void nextTerm(long last, long floor, long expected) {
        assertThat(Terms.next(last, floor)).isEqualTo(expected);
    }

    @Test
    void exhaustedTermSpaceIsRefusedNotWrapped() {
        // the finding: at Long.MAX_VALUE - 1 terms went MAX-1, MAX, MAX-1
        for (long last : new long[] {ElectionAdmin.MAX_TERM, Long.MAX_VALUE - 1, Long.MAX_VALUE}) {
            assertThatThrownBy(() -> Terms.next(last, 0))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("term must stay at most " + ElectionAdmin.MAX_TERM)
                    .hasMessageContaining(Long.toString(last));
        }
    }

    @Test
    void floorAboveLimitIsRefused() {
        assertThatThrownBy(() -> Terms.next(3, Long.MAX_VALUE - 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("term-floor must be at most " + ElectionAdmin.MAX_TERM)
                .hasMessageContaining(Long.toString(Long.MAX_VALUE - 1));
    }

    @Test
    void ensureTermAtLeastRefusesAbsurdFloorsNamingPropertyLimitAndValue() {
        assertThatThrownBy(() -> Terms.checkFloor("orders", Long.MAX_VALUE - 1))
                .isInstanceOf(ElectionException.class)
                .hasMessageContaining("ensureTermAtLeast(orders)")
                .hasMessageContaining("term must be between 1 and " + ElectionAdmin.MAX_TERM)
                .hasMessageContaining("but was " + (Long.MAX_VALUE - 1));
        assertThatThrownBy(() -> Terms.checkFloor("orders", 0)).hasMessageContaining("but was 0");
        Terms.checkFloor("orders", ElectionAdmin.MAX_TERM); // the limit itself is allowed
    }
}
