package dev.fenceline.sample.worker;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The worker's history file: one JSON object per line, appended and flushed line by line (the
 * fault-injection suite parses it). Every line has {@code ts_wall_ms}, {@code ts_mono_ns} (System.nanoTime,
 * comparable within one process only), {@code worker}, {@code event}. Events:
 * <pre>
 * {"event":"start","pid":123,"election":"settlement","ttl_ms":5000}
 * {"event":"state","state":"LEADER","term":7,"lease":123}
 * {"event":"batch","phase":"start","term":7,"batch_key":"sha256:..","payments":100}
 * {"event":"batch","phase":"end","term":7,"batch_key":"sha256:..","outcome":"committed|rejected|failed|unknown","payments":100,"error":".."}
 * {"event":"validity","term":7,"valid_from_mono_ns":..,"valid_until_mono_ns":..}
 * {"event":"term_floor","db_mark":9,"etcd_term":3,"floor":10}
 * {"event":"debug_pause","term":7,"batch_key":"sha256:.."}   (only with --debug-pause-inside-batch-file)
 * {"event":"stop","reason":"SIGTERM"}
 * </pre>
 * A disabled log ({@link #disabled()}) ignores everything.
 */
public final class HistoryLog implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final OutputStream out;
    private final String worker;

    private HistoryLog(OutputStream out, String worker) {
        this.out = out;
        this.worker = worker;
    }

    public static HistoryLog open(Path file, String worker) {
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                java.nio.file.Files.createDirectories(parent);
            }
            return new HistoryLog(new FileOutputStream(file.toFile(), true), worker);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open --history-file " + file + ": " + e.getMessage(), e);
        }
    }

    public static HistoryLog disabled() {
        return new HistoryLog(null, null);
    }

    public boolean enabled() {
        return out != null;
    }

    /** Appends one event; {@code kv} are alternating field names and values (null values are left out). */
    public void event(String event, Object... kv) {
        if (out == null) {
            return;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ts_wall_ms", System.currentTimeMillis());
        m.put("ts_mono_ns", System.nanoTime());
        m.put("worker", worker);
        m.put("event", event);
        for (int i = 0; i + 1 < kv.length; i += 2) {
            if (kv[i + 1] != null) {
                m.put(String.valueOf(kv[i]), kv[i + 1]);
            }
        }
        try {
            byte[] line = (JSON.writeValueAsString(m) + "\n").getBytes(StandardCharsets.UTF_8);
            synchronized (this) {
                out.write(line);
                out.flush();
            }
        } catch (IOException e) {
            // The history is diagnostics for the test harness; never let it break the worker.
            System.err.println("history-file write failed: " + e.getMessage());
        }
    }

    @Override
    public synchronized void close() {
        if (out != null) {
            try {
                out.close();
            } catch (IOException ignored) {
                // nothing to do
            }
        }
    }
}
