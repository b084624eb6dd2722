package dev.fenceline.sample.worker;

import dev.fenceline.election.ElectionConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Validated worker settings.
 *
 * @param pauseInsideBatchFile debug hook for the demo and tests: when this file exists, the worker prints
 *                             {@code FENCELINE-PAUSED-INSIDE-BATCH ...} on stdout after it has written a
 *                             batch's updates and before the batch row and the commit, and waits until
 *                             the file is deleted (null = off)
 * @param etcd                 how to reach etcd (endpoints, TLS files, credentials), validated; the worker's election
 *                             session is {@code etcd().toBuilder().ttl(ttl()).meterRegistry(..).build()}
 */
public record WorkerConfig(
        String workerId,
        String election,
        String resource,
        String jdbcUrl,
        String dbUser,
        String dbPassword,
        List<String> etcdEndpoints,
        Duration ttl,
        int batchSize,
        Duration interval,
        Integer metricsPort,
        String metricsHost,
        Path historyFile,
        Path pauseInsideBatchFile,
        ElectionConfig etcd) {}
