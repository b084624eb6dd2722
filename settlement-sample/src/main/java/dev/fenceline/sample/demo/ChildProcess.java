package dev.fenceline.sample.demo;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * A {@code fenceline} command run as a separate JVM (the demo's workers; the integration tests' CLI calls).
 * stdout and stderr are pumped line by line into a log file and kept in memory for {@link #awaitLine}.
 */
public final class ChildProcess implements AutoCloseable {
    private final String name;
    private final Process process;
    private final List<String> stdout = new CopyOnWriteArrayList<>();
    private final List<String> stderr = new CopyOnWriteArrayList<>();
    private final Thread outPump;
    private final Thread errPump;

    private ChildProcess(String name, Process process, Path logFile, Consumer<String> stderrWatcher) {
        this.name = name;
        this.process = process;
        PrintStream log = openLog(logFile);
        this.outPump = pump(process.getInputStream(), stdout, log, "out", null);
        this.errPump = pump(process.getErrorStream(), stderr, log, "err", stderrWatcher);
    }

    /** The java launcher of this JVM. */
    public static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** The class path to launch {@code fenceline} from: this JVM's (the shaded jar when run with java -jar). */
    public static String fencelineClassPath() {
        return System.getProperty("fenceline.jar", System.getProperty("java.class.path"));
    }

    /** {@code java [jvmArgs] -cp CP dev.fenceline.sample.cli.FencelineCli args...}. */
    public static List<String> fencelineCommand(String classPath, List<String> jvmArgs, List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(javaBinary());
        cmd.addAll(jvmArgs);
        cmd.add("-cp");
        cmd.add(classPath);
        cmd.add("dev.fenceline.sample.cli.FencelineCli");
        cmd.addAll(args);
        return cmd;
    }

    public static ChildProcess start(String name, List<String> command, Path logFile, Consumer<String> stderrWatcher) {
        try {
            ProcessBuilder pb = new ProcessBuilder(command);
            pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            return new ChildProcess(name, pb.start(), logFile, stderrWatcher);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name + ": " + e.getMessage(), e);
        }
    }

    private static PrintStream openLog(Path logFile) {
        if (logFile == null) {
            return null;
        }
        try {
            return new PrintStream(
                    Files.newOutputStream(logFile, StandardOpenOption.CREATE, StandardOpenOption.APPEND),
                    true,
                    StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Thread pump(InputStream in, List<String> sink, PrintStream log, String stream, Consumer<String> watcher) {
        Thread t = new Thread(
                () -> {
                    try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                        String line;
                        while ((line = r.readLine()) != null) {
                            sink.add(line);
                            if (log != null) {
                                synchronized (log) {
                                    log.println(line);
                                }
                            }
                            if (watcher != null) {
                                try {
                                    watcher.accept(line);
                                } catch (RuntimeException ignored) {
                                    // a watcher must not kill the pump
                                }
                            }
                        }
                    } catch (IOException ignored) {
                        // process gone
                    }
                },
                name + "-" + stream);
        t.setDaemon(true);
        t.start();
        return t;
    }

    public String name() {
        return name;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public List<String> stdout() {
        return List.copyOf(stdout);
    }

    public List<String> stderr() {
        return List.copyOf(stderr);
    }

    public String stdoutText() {
        return String.join("\n", stdout);
    }

    public String stderrText() {
        return String.join("\n", stderr);
    }

    /** Sends a signal by name (STOP, CONT, TERM, KILL) with kill(1). */
    public void signal(String sig) {
        try {
            Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid()))
                    .redirectErrorStream(true)
                    .start();
            k.getInputStream().readAllBytes();
            k.waitFor(5, TimeUnit.SECONDS);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits for a stdout line matching {@code p}; returns it or null on timeout/exit. */
    public String awaitLine(Predicate<String> p, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int seen = 0;
        while (System.nanoTime() < deadline) {
            List<String> lines = stdout;
            for (int i = seen; i < lines.size(); i++) {
                if (p.test(lines.get(i))) {
                    return lines.get(i);
                }
            }
            seen = lines.size();
            if (!process.isAlive() && seen == stdout.size()) {
                outPump.join(1000);
                if (seen == stdout.size()) {
                    return null;
                }
            }
            Thread.sleep(20);
        }
        return null;
    }

    /** Waits for exit; returns the exit code or null on timeout. */
    public Integer waitFor(Duration timeout) throws InterruptedException {
        if (process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            outPump.join(2000);
            errPump.join(2000);
            return process.exitValue();
        }
        return null;
    }

    /** Kills the process (SIGCONT first, in case it is stopped) and waits for it. */
    @Override
    public void close() {
        if (process.isAlive()) {
            signal("CONT");
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
