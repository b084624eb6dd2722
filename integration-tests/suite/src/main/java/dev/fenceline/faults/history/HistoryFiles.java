package dev.fenceline.faults.history;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads the workers' JSONL history files (format in the contract: event = state | batch(start/end) | validity).
 * Tolerant of what a kill -9 leaves behind: a torn last line is skipped and a batch start without an end becomes an
 * attempt with outcome UNKNOWN. Lines it does not understand are counted, not fatal.
 */
public final class HistoryFiles {
    private static final ObjectMapper JSON = new ObjectMapper();

    public final List<BatchAttempt> attempts = new ArrayList<>();
    public final List<StateChange> states = new ArrayList<>();
    public final List<ValidityWindow> validity = new ArrayList<>();
    public int unreadableLines;

    public static HistoryFiles read(List<Path> files) {
        HistoryFiles h = new HistoryFiles();
        for (Path f : files) {
            if (!Files.exists(f)) {
                continue;
            }
            try {
                h.parse(Files.readAllLines(f, StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read history file " + f, e);
            }
        }
        return h;
    }

    public static HistoryFiles parseLines(List<String> lines) {
        HistoryFiles h = new HistoryFiles();
        h.parse(lines);
        return h;
    }

    private void parse(List<String> lines) {
        // Open attempts per worker, in start order (a worker runs one batch at a time, but be lenient).
        Map<String, Deque<JsonNode>> open = new LinkedHashMap<>();
        for (String line : lines) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode n;
            try {
                n = JSON.readTree(line);
            } catch (IOException e) {
                unreadableLines++;
                continue;
            }
            if (n == null || !n.isObject()) {
                unreadableLines++;
                continue;
            }
            String worker = n.path("worker").asText(null);
            String event = n.path("event").asText("");
            long mono = n.path("ts_mono_ns").asLong(-1);
            switch (event) {
                case "state" -> {
                    String state = n.path("state").asText("");
                    states.add(new StateChange(
                            worker,
                            mono,
                            n.path("ts_wall_ms").asLong(-1),
                            state,
                            n.path("term").asLong(0),
                            n.path("lease").asLong(0)));
                }
                case "validity" ->
                    validity.add(new ValidityWindow(
                            worker,
                            n.path("term").asLong(0),
                            n.path("valid_from_mono_ns").asLong(-1),
                            n.path("valid_until_mono_ns").asLong(-1),
                            mono));
                case "batch" -> {
                    String phase = n.path("phase").asText("");
                    Deque<JsonNode> q = open.computeIfAbsent(worker, k -> new ArrayDeque<>());
                    if ("start".equals(phase)) {
                        q.addLast(n);
                    } else if ("end".equals(phase)) {
                        JsonNode start = takeMatching(q, n);
                        long startMono =
                                start != null ? start.path("ts_mono_ns").asLong(-1) : mono;
                        attempts.add(new BatchAttempt(
                                worker,
                                n.path("term").asLong(0),
                                text(n, "batch_key"),
                                startMono,
                                mono,
                                Outcome.parse(n.path("outcome").asText(null)),
                                n.path("payments").asInt(0),
                                text(n, "error")));
                    } else {
                        unreadableLines++;
                    }
                }
                case "start" -> closeAll(worker, open); // a (re)started worker process: older starts never end
                case "stop", "term_floor", "debug_pause" -> {}
                default -> unreadableLines++;
            }
        }
        open.keySet().forEach(w -> closeAll(w, open));
    }

    private void closeAll(String worker, Map<String, Deque<JsonNode>> open) {
        Deque<JsonNode> q = open.get(worker);
        if (q == null) {
            return;
        }
        while (!q.isEmpty()) {
            JsonNode s = q.pollFirst();
            attempts.add(new BatchAttempt(
                    worker,
                    s.path("term").asLong(0),
                    text(s, "batch_key"),
                    s.path("ts_mono_ns").asLong(-1),
                    -1,
                    Outcome.UNKNOWN,
                    0,
                    "no end record"));
        }
    }

    /** The start with the same term and batch key; older unmatched starts before it are attempts that never ended. */
    private JsonNode takeMatching(Deque<JsonNode> q, JsonNode end) {
        String key = text(end, "batch_key");
        long term = end.path("term").asLong(0);
        for (JsonNode s : q) {
            if (s.path("term").asLong(0) == term && java.util.Objects.equals(text(s, "batch_key"), key)) {
                while (!q.isEmpty()) {
                    JsonNode head = q.pollFirst();
                    if (head == s) {
                        return s;
                    }
                    attempts.add(new BatchAttempt(
                            head.path("worker").asText(null),
                            head.path("term").asLong(0),
                            text(head, "batch_key"),
                            head.path("ts_mono_ns").asLong(-1),
                            -1,
                            Outcome.UNKNOWN,
                            0,
                            "no end record"));
                }
            }
        }
        return null;
    }

    private static String text(JsonNode n, String field) {
        JsonNode v = n.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }
}
