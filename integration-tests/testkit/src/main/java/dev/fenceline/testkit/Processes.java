package dev.fenceline.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Small process helpers: signals by pid, running a command to completion with a bound. */
public final class Processes {
    private Processes() {}

    /** Result of a finished command. */
    public record Result(int exitCode, String stdout, String stderr) {
        public boolean ok() {
            return exitCode == 0;
        }
    }

    /**
     * Sends {@code signal} ("STOP", "CONT", "KILL", "TERM", "QUIT", ...) to {@code pid}. Returns false if the
     * process no longer exists.
     */
    public static boolean signal(long pid, String signal) {
        Result r = run(List.of("kill", "-" + signal, Long.toString(pid)), Duration.ofSeconds(10), null, Map.of());
        return r.ok();
    }

    public static boolean isAlive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /** Runs a command to completion; a command still running after {@code timeout} is killed. */
    public static Result run(List<String> command, Duration timeout, Path workDir, Map<String, String> env) {
        ProcessBuilder pb = new ProcessBuilder(command);
        if (workDir != null) {
            pb.directory(workDir.toFile());
        }
        pb.environment().putAll(env);
        Path out = null;
        Path err = null;
        try {
            out = Files.createTempFile("fenceline-cmd-", ".out");
            err = Files.createTempFile("fenceline-cmd-", ".err");
            pb.redirectOutput(out.toFile()).redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.PIPE);
            Process p = pb.start();
            p.getOutputStream().close();
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(5, TimeUnit.SECONDS);
                return new Result(
                        -1,
                        Files.readString(out),
                        "timed out after " + timeout + ": " + String.join(" ", command) + "\n" + Files.readString(err));
            }
            return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
        } catch (IOException e) {
            return new Result(-1, "", "cannot run " + String.join(" ", command) + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, "", "interrupted while running " + String.join(" ", command));
        } finally {
            deleteQuietly(out);
            deleteQuietly(err);
        }
    }

    /** Like {@link #run} but fails with the command's stderr when it does not exit 0. */
    public static String runOrFail(List<String> command, Duration timeout, Path workDir, Map<String, String> env) {
        Result r = run(command, timeout, workDir, env);
        if (!r.ok()) {
            throw new InfrastructureException("command failed (exit " + r.exitCode() + "): " + String.join(" ", command)
                    + "\n" + r.stderr().strip() + "\n" + r.stdout().strip());
        }
        return r.stdout();
    }

    /** The first executable named {@code name} on PATH, or null. */
    public static Path onPath(String name) {
        String path = System.getenv("PATH");
        List<String> dirs = new ArrayList<>(path == null ? List.of() : List.of(path.split(":")));
        dirs.add("/usr/bin");
        dirs.add("/usr/local/bin");
        for (String dir : dirs) {
            if (dir.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    public static boolean runningAsRoot() {
        Result r = run(List.of("id", "-u"), Duration.ofSeconds(5), null, Map.of());
        return r.ok() && r.stdout().strip().equals("0");
    }

    static String readAll(InputStream in) throws IOException {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }

    static void deleteQuietly(Path file) {
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // a temp file we could not delete is not worth failing a test over
            }
        }
    }

    /** Deletes a directory tree; best effort. */
    public static void deleteTree(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        run(List.of("rm", "-rf", dir.toAbsolutePath().toString()), Duration.ofSeconds(60), null, Map.of());
    }
}
