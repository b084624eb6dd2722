package dev.fenceline.sample.worker;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The history-file format the fault-injection suite parses: one flushed JSON object per line. */
class HistoryLogTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void everyLineIsAJsonObjectWithTheCommonFieldsFirstAndNullsLeftOut(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("sub/w1.history.jsonl");
        try (HistoryLog h = HistoryLog.open(f, "w1")) {
            h.event("state", "state", "LEADER", "term", 7L, "lease", 123L, "reason", "campaign won");
            h.event("batch", "phase", "start", "term", 7L, "batch_key", "sha256:ab", "payments", 100);
            // written and flushed line by line: readable before close
            assertThat(Files.readAllLines(f)).hasSize(2);
            h.event(
                    "batch",
                    "phase",
                    "end",
                    "term",
                    7L,
                    "batch_key",
                    "sha256:ab",
                    "outcome",
                    "committed",
                    "payments",
                    100,
                    "error",
                    null);
        }
        List<String> lines = Files.readAllLines(f);
        assertThat(lines).hasSize(3);
        JsonNode end = JSON.readTree(lines.get(2));
        assertThat(end.fieldNames())
                .toIterable()
                .containsExactly(
                        "ts_wall_ms",
                        "ts_mono_ns",
                        "worker",
                        "event",
                        "phase",
                        "term",
                        "batch_key",
                        "outcome",
                        "payments");
        assertThat(end.get("worker").asText()).isEqualTo("w1");
        assertThat(end.get("outcome").asText()).isEqualTo("committed");
        assertThat(end.get("term").asLong()).isEqualTo(7);
        assertThat(JSON.readTree(lines.get(0)).get("state").asText()).isEqualTo("LEADER");
        assertThat(JSON.readTree(lines.get(0)).get("ts_mono_ns").asLong())
                .isLessThanOrEqualTo(end.get("ts_mono_ns").asLong());
    }

    @Test
    void reopeningAppends(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("w2.jsonl");
        try (HistoryLog h = HistoryLog.open(f, "w2")) {
            h.event("start");
        }
        try (HistoryLog h = HistoryLog.open(f, "w2")) {
            h.event("start");
        }
        assertThat(Files.readAllLines(f)).hasSize(2);
    }

    @Test
    void aDisabledLogWritesNothing() {
        try (HistoryLog h = HistoryLog.disabled()) {
            h.event("state", "state", "LEADER");
            assertThat(h.enabled()).isFalse();
        }
    }
}
