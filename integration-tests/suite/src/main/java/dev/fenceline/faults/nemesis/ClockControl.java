package dev.fenceline.faults.nemesis;

import dev.fenceline.testkit.Processes;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wall-clock jumps for worker processes with libfaketime (Debian package {@code faketime}): each worker runs with
 * {@code LD_PRELOAD=libfaketime.so.1} and its own offset file ({@code FAKETIME_TIMESTAMP_FILE}, re-read at most once a
 * second). Only the wall clock moves ({@code FAKETIME_DONT_FAKE_MONOTONIC=1}): that is what an NTP step or a VM
 * resume does, and CLOCK_MONOTONIC, which the election must use for its validity, is left alone.
 */
public final class ClockControl {
    private static final Logger log = LoggerFactory.getLogger(ClockControl.class);
    private static final List<String> CANDIDATES = List.of(
            "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/faketime/libfaketime.so.1",
            "/usr/local/lib/faketime/libfaketime.so.1");

    private final Path library;
    private final Path dir;

    private ClockControl(Path library, Path dir) {
        this.library = library;
        this.dir = dir;
    }

    /**
     * libfaketime if present; when missing and running as root, installs Debian's {@code faketime} package with
     * {@code ensure-faketime.sh} semantics (apt-get, bounded); otherwise null with the reason logged.
     */
    public static ClockControl detect(Path dir, boolean installIfRoot) {
        Path lib = find();
        if (lib == null && installIfRoot && Processes.runningAsRoot()) {
            log.info("libfaketime missing: installing Debian's faketime package (running as root)");
            Processes.Result r = Processes.run(
                    List.of(
                            "sh",
                            "-c",
                            "apt-get install -y faketime || (apt-get update && apt-get install -y faketime)"),
                    Duration.ofMinutes(3),
                    null,
                    Map.of("DEBIAN_FRONTEND", "noninteractive"));
            if (!r.ok()) {
                log.warn("cannot install faketime: {}", r.stderr().strip());
            }
            lib = find();
        }
        if (lib == null) {
            log.warn(
                    "libfaketime not found ({}); clock jumps are unavailable. Install Debian's 'faketime' package.",
                    CANDIDATES);
            return null;
        }
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new ClockControl(lib, dir);
    }

    private static Path find() {
        String configured = System.getenv("FENCELINE_LIBFAKETIME");
        if (configured != null && Files.isRegularFile(Path.of(configured))) {
            return Path.of(configured);
        }
        for (String c : CANDIDATES) {
            if (Files.isRegularFile(Path.of(c))) {
                return Path.of(c);
            }
        }
        return null;
    }

    private Path offsetFile(String worker) {
        return dir.resolve(worker + ".faketime");
    }

    /** Environment for a worker process whose clock this controls (offset starts at zero). */
    public Map<String, String> environmentFor(String worker) {
        set(worker, "+0");
        return Map.of(
                "LD_PRELOAD",
                library.toString(),
                "FAKETIME_TIMESTAMP_FILE",
                offsetFile(worker).toString(),
                "FAKETIME_CACHE_DURATION",
                "1",
                "FAKETIME_DONT_FAKE_MONOTONIC",
                "1",
                // Without this, libfaketime 0.9.10 makes every monotonic clock call of a JVM slow (startup 10x).
                "FAKETIME_FORCE_MONOTONIC_FIX",
                "0");
    }

    /** Moves the worker's wall clock by {@code offset} from real time (negative = backwards). */
    public void jump(String worker, Duration offset) {
        long minutes = offset.toMinutes();
        long seconds = offset.toSeconds();
        set(
                worker,
                (seconds >= 0 ? "+" : "-") + (seconds % 60 == 0 ? Math.abs(minutes) + "m" : Math.abs(seconds) + "s"));
    }

    /** Back to real time. */
    public void reset(String worker) {
        set(worker, "+0");
    }

    private void set(String worker, String spec) {
        try {
            Path tmp = dir.resolve(worker + ".faketime.tmp");
            Files.writeString(tmp, spec + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, offsetFile(worker), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot set the clock offset of " + worker, e);
        }
    }
}
