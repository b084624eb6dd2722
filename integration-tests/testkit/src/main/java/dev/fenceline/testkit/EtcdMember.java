package dev.fenceline.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** One etcd member process with handles to stop, kill -9, pause (SIGSTOP), resume (SIGCONT), restart and wipe it. */
public final class EtcdMember {
    private final String name;
    private final int clientPort;
    private final int peerPort;
    private final Path dataDir;
    private final Path etcd;
    private String initialCluster;
    private String token;
    private Process process;
    private boolean paused;

    EtcdMember(String name, int clientPort, int peerPort, Path dataDir, Path etcd) {
        this.name = name;
        this.clientPort = clientPort;
        this.peerPort = peerPort;
        this.dataDir = dataDir;
        this.etcd = etcd;
    }

    synchronized void configure(String initialCluster, String token) {
        this.initialCluster = initialCluster;
        this.token = token;
    }

    synchronized void launch(String clusterState) {
        if (isRunning()) {
            throw new IllegalStateException("etcd member " + name + " is already running (pid " + process.pid() + ")");
        }
        List<String> cmd = new ArrayList<>(List.of(
                etcd.toString(),
                "--name",
                name,
                "--data-dir",
                dataDir.toString(),
                "--listen-client-urls",
                clientEndpoint(),
                "--advertise-client-urls",
                clientEndpoint(),
                "--listen-peer-urls",
                peerUrl(),
                "--initial-advertise-peer-urls",
                peerUrl(),
                "--initial-cluster",
                initialCluster,
                "--initial-cluster-state",
                clusterState,
                "--initial-cluster-token",
                token,
                "--heartbeat-interval",
                "100",
                "--election-timeout",
                "1000",
                "--logger",
                "zap",
                "--log-level",
                "warn"));
        try {
            Files.createDirectories(dataDir.getParent());
            Path logFile = dataDir.getParent().resolve(name + ".log");
            process = new ProcessBuilder(cmd)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
                    .start();
            paused = false;
            Reaper.get().watch(process.pid());
        } catch (IOException e) {
            throw new InfrastructureException(
                    "cannot start etcd member " + name + " (" + etcd + "): " + e.getMessage(), e);
        }
    }

    public String name() {
        return name;
    }

    public String clientEndpoint() {
        return "http://127.0.0.1:" + clientPort;
    }

    public int clientPort() {
        return clientPort;
    }

    public String peerUrl() {
        return "http://127.0.0.1:" + peerPort;
    }

    public int peerPort() {
        return peerPort;
    }

    public Path dataDir() {
        return dataDir;
    }

    public synchronized long pid() {
        if (process == null) {
            throw new IllegalStateException("etcd member " + name + " was never started");
        }
        return process.pid();
    }

    public synchronized boolean isRunning() {
        return process != null && process.isAlive();
    }

    public synchronized boolean isPaused() {
        return paused && isRunning();
    }

    /** SIGTERM and wait for exit (etcd may take several seconds); SIGKILL after 15 s. */
    public synchronized void stop() {
        if (!isRunning()) {
            return;
        }
        resume();
        process.destroy();
        awaitExit(15);
    }

    /** SIGKILL: the member dies at once without a clean shutdown. */
    public synchronized void kill() {
        if (!isRunning()) {
            return;
        }
        process.destroyForcibly();
        awaitExit(15);
    }

    /** SIGSTOP: the process freezes with its sockets open, as in a long GC pause or a VM stall. */
    public synchronized void pause() {
        if (!isRunning()) {
            throw new IllegalStateException("cannot pause etcd member " + name + ": it is not running");
        }
        Processes.signal(process.pid(), "STOP");
        paused = true;
    }

    /** SIGCONT. A no-op if the member is not paused. */
    public synchronized void resume() {
        if (paused && isRunning()) {
            Processes.signal(process.pid(), "CONT");
        }
        paused = false;
    }

    /** Start again with the same data folder and identity (after stop or kill). */
    public synchronized void restart() {
        if (isRunning()) {
            stop();
        }
        launch("existing");
    }

    /** Deletes the member's data; the member must be stopped. Use {@link EtcdCluster#rejoin} to bring it back. */
    public synchronized void wipe() {
        if (isRunning()) {
            throw new IllegalStateException(
                    "cannot wipe etcd member " + name + " while it runs; stop or kill it first");
        }
        Processes.deleteTree(dataDir);
    }

    private void awaitExit(int seconds) {
        try {
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        Reaper.get().forget(process.pid());
        paused = false;
    }

    @Override
    public String toString() {
        return name + "(" + clientEndpoint() + ")";
    }
}
