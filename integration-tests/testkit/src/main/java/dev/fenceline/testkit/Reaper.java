package dev.fenceline.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Guarantees that servers started by this JVM do not outlive it.
 *
 * <p>Why a separate watchdog: a JVM shutdown hook does not run on {@code kill -9} or when surefire gives up on a
 * fork, and {@code pg_ctl} daemonizes the postmaster so it is not even our child. So each JVM that starts a
 * server also starts one detached ({@code setsid}) shell that polls the JVM's pid; when the JVM is gone it
 * sends SIGCONT (a paused member cannot die otherwise) and SIGQUIT, then SIGKILL, to every pid registered in
 * this JVM's reaper folder, and runs the registered cleanup commands (e.g. removing data folders).
 */
public final class Reaper {
    private static Reaper instance;

    private final Path dir;

    private Reaper(Path dir) {
        this.dir = dir;
    }

    /** The reaper of this JVM, started on first use. */
    public static synchronized Reaper get() {
        if (instance == null) {
            try {
                Path dir = Files.createTempDirectory("fenceline-reaper-");
                Files.createDirectories(dir.resolve("pids"));
                Files.createDirectories(dir.resolve("paths"));
                long jvm = ProcessHandle.current().pid();
                String d = dir.toAbsolutePath().toString();
                String script = "while kill -0 " + jvm + " 2>/dev/null; do sleep 1; done; "
                        + "for f in " + d + "/pids/*; do [ -e \"$f\" ] || continue; p=$(basename \"$f\"); "
                        + "kill -CONT $p 2>/dev/null; kill -QUIT $p 2>/dev/null; done; sleep 2; "
                        + "for f in " + d + "/pids/*; do [ -e \"$f\" ] || continue; p=$(basename \"$f\"); "
                        + "kill -9 $p 2>/dev/null; done; sleep 1; "
                        + "for f in " + d + "/paths/*; do [ -e \"$f\" ] || continue; rm -rf \"$(cat \"$f\")\"; done; "
                        + "rm -rf " + d;
                new ProcessBuilder("setsid", "bash", "-c", script)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                        .redirectError(ProcessBuilder.Redirect.DISCARD)
                        .start();
                instance = new Reaper(dir);
            } catch (IOException e) {
                throw new InfrastructureException(
                        "cannot start the process reaper (needs setsid and bash): " + e.getMessage(), e);
            }
        }
        return instance;
    }

    /** Registers a pid to be killed if this JVM dies. */
    public void watch(long pid) {
        try {
            Files.writeString(dir.resolve("pids").resolve(Long.toString(pid)), "");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The pid exited or was stopped on purpose: stop watching it (pids are reused by the OS). */
    public void forget(long pid) {
        Processes.deleteQuietly(dir.resolve("pids").resolve(Long.toString(pid)));
    }

    /** Registers a folder to be deleted if this JVM dies. */
    public void deleteOnDeath(Path path) {
        try {
            Files.writeString(
                    dir.resolve("paths").resolve(Integer.toHexString(path.hashCode()) + "-" + System.nanoTime()),
                    path.toAbsolutePath().toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    List<Path> watched() throws IOException {
        try (var s = Files.list(dir.resolve("pids"))) {
            return s.toList();
        }
    }
}
