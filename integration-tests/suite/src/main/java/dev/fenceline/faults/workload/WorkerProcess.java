package dev.fenceline.faults.workload;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.testkit.Processes;
import dev.fenceline.testkit.Reaper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * One worker process of the sample ({@code java -jar fenceline.jar worker ...}) with its history file, log file and
 * metrics port, and handles to freeze, kill -9 and restart it (same id, same history file).
 */
public final class WorkerProcess implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** What the sample's worker prints when its debug hook holds it inside a batch. */
    public static final String PAUSE_MARKER = "FENCELINE-PAUSED-INSIDE-BATCH";

    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();

    private final String id;
    private final List<String> command;
    private final Map<String, String> env;
    private final Path historyFile;
    private final Path logFile;
    private final int metricsPort;
    private final Path pauseFile;
    private Process process;
    private boolean frozen;
    private int starts;
    /** The runner ended the current process (kill -9 of a fault, stop): its exit is no finding. */
    private boolean exitRequested;
    /** The current process's unexpected exit was already handed out by {@link #takeUnexpectedExit}. */
    private boolean exitReported;
    /** When the current process ended (monotonic ns and wall clock), set by its exit callback; 0/null while it runs. */
    private volatile long exitMonoNs;

    private volatile java.time.Instant exitAt;

    /** What the worker's /health says. */
    public record Health(String state, long term, boolean valid) {}

    public WorkerProcess(
            String id,
            List<String> command,
            Map<String, String> env,
            Path historyFile,
            Path logFile,
            int metricsPort,
            Path pauseFile) {
        this.pauseFile = pauseFile;
        this.id = id;
        this.command = List.copyOf(command);
        this.env = Map.copyOf(env);
        this.historyFile = historyFile;
        this.logFile = logFile;
        this.metricsPort = metricsPort;
    }

    public String id() {
        return id;
    }

    public Path historyFile() {
        return historyFile;
    }

    public Path logFile() {
        return logFile;
    }

    public synchronized int starts() {
        return starts;
    }

    public synchronized void start() {
        if (isAlive()) {
            throw new IllegalStateException("worker " + id + " already runs (pid " + process.pid() + ")");
        }
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
        pb.environment().putAll(env);
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start worker " + id + ": " + e.getMessage(), e);
        }
        try {
            process.getOutputStream().close();
        } catch (IOException ignored) {
            // stdin is not used
        }
        frozen = false;
        starts++;
        exitRequested = false;
        exitReported = false;
        exitMonoNs = 0;
        exitAt = null;
        Process started = process;
        started.onExit().thenRun(() -> exited(started));
        Reaper.get().watch(process.pid());
    }

    private synchronized void exited(Process p) {
        if (p == process) {
            exitMonoNs = System.nanoTime();
            exitAt = java.time.Instant.now();
        }
    }

    /**
     * Whether an ended process is a finding: it ended (not alive), the runner did not end it, and it was not handed
     * out before. A frozen process is alive; one a fault killed, or the runner stopped, was asked to end.
     */
    static boolean isUnexpectedExit(boolean started, boolean alive, boolean exitRequested, boolean alreadyReported) {
        return started && !alive && !exitRequested && !alreadyReported;
    }

    /**
     * The current process's exit when nobody asked for it (see {@link #isUnexpectedExit}), once; empty otherwise.
     * The caller restarts the worker ({@link #start()}).
     */
    public synchronized Optional<dev.fenceline.faults.history.WorkerExit> takeUnexpectedExit(int tailLines) {
        if (!isUnexpectedExit(process != null, process != null && process.isAlive(), exitRequested, exitReported)) {
            return Optional.empty();
        }
        exitReported = true;
        long mono = exitMonoNs != 0 ? exitMonoNs : System.nanoTime(); // the exit callback may not have run yet
        java.time.Instant at = exitAt != null ? exitAt : java.time.Instant.now();
        return Optional.of(new dev.fenceline.faults.history.WorkerExit(
                id, process.exitValue(), mono, at, logTail(logFile, tailLines)));
    }

    /** The last {@code lines} lines of a log file ("(no log: ...)" when it cannot be read). */
    static String logTail(Path file, int lines) {
        try {
            List<String> all = java.nio.file.Files.readAllLines(file);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | java.io.UncheckedIOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    public synchronized long pid() {
        return process == null ? -1 : process.pid();
    }

    public synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    public synchronized boolean isFrozen() {
        return frozen && isAlive();
    }

    /** SIGSTOP. */
    public synchronized void freeze() {
        if (isAlive()) {
            Processes.signal(process.pid(), "STOP");
            frozen = true;
        }
    }

    /** SIGCONT. */
    public synchronized void thaw() {
        if (isAlive()) {
            Processes.signal(process.pid(), "CONT");
        }
        frozen = false;
    }

    /**
     * SIGQUIT: the JVM writes a thread dump to its stdout, i.e. into this worker's log, and goes on. A diagnostic for
     * a run with no commit long after a heal (what every thread was waiting for).
     */
    public synchronized boolean dumpThreads() {
        if (isAlive() && !frozen) {
            Processes.signal(process.pid(), "QUIT");
            return true;
        }
        return false;
    }

    /** kill -9 and wait for the process to be gone. */
    public synchronized void kill9() {
        if (process == null) {
            return;
        }
        exitRequested = true;
        process.destroyForcibly();
        try {
            process.waitFor(15, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Reaper.get().forget(process.pid());
        frozen = false;
    }

    /** SIGTERM (after SIGCONT), bounded wait, then kill -9. */
    public synchronized void stop(Duration grace) {
        if (!isAlive()) {
            return;
        }
        thaw();
        exitRequested = true;
        process.destroy();
        try {
            if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                kill9();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            kill9();
        }
        Reaper.get().forget(process.pid());
    }

    /**
     * Arms the sample's debug hook: the worker's next batch stops after its updates, before its commit, and waits
     * there while the pause file exists. Returns true if the worker reported (in its history) that it is paused inside
     * a batch within {@code wait}; the file stays until {@link #releasePause()}.
     */
    public boolean pauseInsideNextBatch(Duration wait) {
        long armedAt = System.nanoTime();
        long logOffset = size(logFile);
        try {
            java.nio.file.Files.writeString(pauseFile, "paused by the fault suite\n");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        long deadline = armedAt + wait.toNanos();
        while (System.nanoTime() < deadline) {
            if (pausedSince(armedAt) || logSaysPaused(logOffset)) {
                return true;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return false;
    }

    private static long size(Path p) {
        try {
            return java.nio.file.Files.size(p);
        } catch (IOException e) {
            return 0;
        }
    }

    /** The sample prints {@value #PAUSE_MARKER} on stdout (our log file) when it stops inside a batch. */
    private boolean logSaysPaused(long fromOffset) {
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(logFile.toFile(), "r")) {
            long len = f.length();
            if (len <= fromOffset) {
                return false;
            }
            f.seek(fromOffset);
            byte[] b = new byte[(int) Math.min(len - fromOffset, 4 << 20)];
            f.readFully(b);
            return new String(b, java.nio.charset.StandardCharsets.UTF_8).contains(PAUSE_MARKER);
        } catch (IOException e) {
            return false;
        }
    }

    private boolean pausedSince(long monoNs) {
        try {
            List<String> lines = java.nio.file.Files.readAllLines(historyFile);
            for (int i = lines.size() - 1; i >= 0 && i >= lines.size() - 50; i--) {
                String l = lines.get(i);
                if (l.contains("\"event\":\"debug_pause\"")) {
                    JsonNode n = JSON.readTree(l);
                    if (n.path("ts_mono_ns").asLong(0) >= monoNs) {
                        return true;
                    }
                }
            }
        } catch (IOException e) {
            return false;
        }
        return false;
    }

    /** Removes the pause file: a paused batch continues (when the process runs), later batches do not stop. */
    public void releasePause() {
        try {
            java.nio.file.Files.deleteIfExists(pauseFile);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** /health of the running worker, or empty if it does not answer within half a second (frozen, dead). */
    public Optional<Health> health() {
        if (!isAlive() || isFrozen()) {
            return Optional.empty();
        }
        try {
            HttpResponse<String> r = HTTP.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPort + "/health"))
                            .timeout(Duration.ofMillis(700))
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            JsonNode n = JSON.readTree(r.body());
            return Optional.of(new Health(
                    n.path("state").asText(""),
                    n.path("term").asLong(0),
                    n.path("valid").asBoolean(false)));
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    @Override
    public void close() {
        stop(Duration.ofSeconds(5));
    }

    @Override
    public String toString() {
        return id + "(pid " + pid() + ")";
    }

    /** The command line for one worker. */
    public static List<String> command(
            Path java,
            Path jar,
            String id,
            long ttlMs,
            int batchSize,
            long intervalMs,
            int metricsPort,
            Path historyFile,
            Path pauseFile,
            String jdbcUrl,
            String etcdCsv) {
        List<String> cmd = new ArrayList<>(List.of(
                java.toString(),
                "-Xmx192m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Xss512k",
                "-jar",
                jar.toString(),
                "worker",
                "--id",
                id,
                "--ttl-ms",
                Long.toString(ttlMs),
                "--batch-size",
                Integer.toString(batchSize),
                "--interval-ms",
                Long.toString(intervalMs),
                "--metrics-port",
                Integer.toString(metricsPort),
                "--history-file",
                historyFile.toString(),
                "--debug-pause-inside-batch-file",
                pauseFile.toString(),
                "--jdbc-url",
                jdbcUrl,
                "--etcd",
                etcdCsv));
        return cmd;
    }
}
