package dev.fenceline.testkit;

import java.nio.file.Path;

/**
 * PostgreSQL in a container: used only when asked for ({@code fenceline.postgres=testcontainers}) and a Docker
 * engine answers. The default path is local processes; this machine has no Docker engine.
 */
final class TestcontainersBackend implements PostgresServer.Backend {
    private final org.testcontainers.postgresql.PostgreSQLContainer container;

    private TestcontainersBackend(org.testcontainers.postgresql.PostgreSQLContainer container) {
        this.container = container;
    }

    static PostgresServer.Backend start(PostgresServer.Options options) {
        try {
            Class.forName("org.testcontainers.DockerClientFactory");
        } catch (ClassNotFoundException e) {
            throw new InfrastructureException("fenceline.postgres=testcontainers but Testcontainers is not on the "
                    + "classpath; add org.testcontainers:testcontainers-postgresql");
        }
        if (!org.testcontainers.DockerClientFactory.instance().isDockerAvailable()) {
            throw new InfrastructureException("fenceline.postgres=testcontainers but no Docker engine answers; "
                    + "leave fenceline.postgres unset to use local PostgreSQL processes");
        }
        var c = new org.testcontainers.postgresql.PostgreSQLContainer("postgres:15")
                .withUsername("postgres")
                .withPassword("postgres")
                .withEnv("POSTGRES_HOST_AUTH_METHOD", "trust")
                .withCommand(
                        "postgres", "-c", "fsync=" + (options.durable() ? "on" : "off"), "-c", "max_connections=200");
        c.start();
        return new TestcontainersBackend(c);
    }

    @Override
    public String host() {
        return container.getHost();
    }

    @Override
    public int port() {
        return container.getMappedPort(5432);
    }

    @Override
    public Path binDir() {
        return null;
    }

    @Override
    public String description() {
        return "Testcontainers " + container.getDockerImageName();
    }

    @Override
    public long pid() {
        return -1;
    }

    @Override
    public void stop() {
        container.stop();
    }
}
