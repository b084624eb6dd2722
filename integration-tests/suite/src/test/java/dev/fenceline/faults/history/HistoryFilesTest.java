package dev.fenceline.faults.history;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class HistoryFilesTest {

    @Test
    void pairsBatchStartAndEndAndKeepsStateAndValidity() {
        HistoryFiles h = HistoryFiles.parseLines(
                List.of(
                        "{\"ts_wall_ms\":1,\"ts_mono_ns\":10,\"worker\":\"w1\",\"event\":\"state\",\"state\":\"LEADER\",\"term\":7,\"lease\":123}",
                        "{\"ts_wall_ms\":1,\"ts_mono_ns\":11,\"worker\":\"w1\",\"event\":\"validity\",\"term\":7,\"valid_from_mono_ns\":10,\"valid_until_mono_ns\":3000}",
                        "{\"ts_wall_ms\":2,\"ts_mono_ns\":20,\"worker\":\"w1\",\"event\":\"batch\",\"phase\":\"start\",\"term\":7,\"batch_key\":\"k1\"}",
                        "{\"ts_wall_ms\":3,\"ts_mono_ns\":30,\"worker\":\"w1\",\"event\":\"batch\",\"phase\":\"end\",\"term\":7,\"batch_key\":\"k1\",\"outcome\":\"committed\",\"payments\":5}",
                        "{\"ts_wall_ms\":4,\"ts_mono_ns\":40,\"worker\":\"w1\",\"event\":\"batch\",\"phase\":\"start\",\"term\":7,\"batch_key\":\"k2\"}",
                        "{\"ts_wall_ms\":5,\"ts_mono_ns\":50,\"worker\":\"w1\",\"event\":\"batch\",\"phase\":\"end\",\"term\":7,\"batch_key\":\"k2\",\"outcome\":\"rejected\",\"payments\":5,\"error\":\"stale\"}"));
        assertThat(h.attempts)
                .containsExactly(
                        new BatchAttempt("w1", 7, "k1", 20, 30, Outcome.COMMITTED, 5, null),
                        new BatchAttempt("w1", 7, "k2", 40, 50, Outcome.REJECTED, 5, "stale"));
        assertThat(h.states).containsExactly(new StateChange("w1", 10, 1, "LEADER", 7, 123));
        assertThat(h.validity).containsExactly(new ValidityWindow("w1", 7, 10, 3000, 11));
        assertThat(h.unreadableLines).isZero();
    }

    @Test
    void aStartWithoutEndIsUnknownAndATornLastLineIsSkipped() {
        HistoryFiles h = HistoryFiles.parseLines(List.of(
                "{\"ts_mono_ns\":20,\"worker\":\"w2\",\"event\":\"batch\",\"phase\":\"start\",\"term\":3,\"batch_key\":\"k9\"}",
                "{\"ts_mono_ns\":25,\"worker\":\"w2\",\"event\":\"batch\",\"phase\":\"st"));
        assertThat(h.attempts).singleElement().satisfies(a -> {
            assertThat(a.outcome()).isEqualTo(Outcome.UNKNOWN);
            assertThat(a.ended()).isFalse();
            assertThat(a.batchKey()).isEqualTo("k9");
        });
        assertThat(h.unreadableLines).isEqualTo(1);
    }

    @Test
    void anEndWhoseStartWasLostStillCounts() {
        HistoryFiles h = HistoryFiles.parseLines(
                List.of(
                        "{\"ts_mono_ns\":20,\"worker\":\"w2\",\"event\":\"batch\",\"phase\":\"start\",\"term\":3,\"batch_key\":\"a\"}",
                        "{\"ts_mono_ns\":30,\"worker\":\"w2\",\"event\":\"batch\",\"phase\":\"end\",\"term\":4,\"batch_key\":\"b\",\"outcome\":\"failed\"}"));
        assertThat(h.attempts)
                .extracting(BatchAttempt::outcome)
                .containsExactlyInAnyOrder(Outcome.FAILED, Outcome.UNKNOWN);
    }
}
