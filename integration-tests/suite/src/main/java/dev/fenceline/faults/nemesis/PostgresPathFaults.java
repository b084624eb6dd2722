package dev.fenceline.faults.nemesis;

import dev.fenceline.faults.workload.FaultEnvironment;
import dev.fenceline.faults.workload.PostgresSetup;
import dev.fenceline.faults.workload.WorkerProcess;
import dev.fenceline.testkit.PgBouncer;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Faults on the way from the workers to PostgreSQL: the pooler ({@link Faults#PGBOUNCER_RESTART},
 * {@link Faults#PGBOUNCER_PAUSE}, {@link Faults#POOLER_SERVER_CONN_KILL}) and the primary itself
 * ({@link Faults#POSTGRES_FAILOVER}). Each is available only when the run's {@link PostgresSetup} has what it needs
 * (a pooler, a standby); otherwise the runner reports it as skipped. Every one heals within a bounded time.
 */
final class PostgresPathFaults {
    private PostgresPathFaults() {}

    static List<Fault> all() {
        return List.of(
                new PoolerFault(Faults.PGBOUNCER_RESTART) {
                    @Override
                    public Injection inject(FaultEnvironment env, Random rnd) {
                        PgBouncer pooler = env.postgres.pooler();
                        long before = pooler.pid();
                        pooler.restart(); // SIGTERM: every client and server connection dropped; same port again
                        return Injection.of(
                                pooler.toString(),
                                "stopped (SIGTERM, pid " + before + ") and started again " + "on port " + pooler.port()
                                        + " (pid " + pooler.pid() + ")",
                                Duration.ofMillis(500),
                                () -> {
                                    if (!pooler.isRunning()) {
                                        pooler.restart();
                                    }
                                });
                    }
                },
                new PoolerFault(Faults.PGBOUNCER_PAUSE) {
                    @Override
                    public Injection inject(FaultEnvironment env, Random rnd) {
                        PgBouncer pooler = env.postgres.pooler();
                        // PAUSE waits for running transactions to end, then holds every new one until RESUME: the
                        // leader's next batch hangs while its lease keeps being renewed through etcd.
                        pooler.admin("PAUSE");
                        return Injection.of(
                                pooler.toString(),
                                "admin console PAUSE (new transactions wait)",
                                Faults.longerThanTtl(env),
                                () -> pooler.admin("RESUME"));
                    }
                },
                new PoolerFault(Faults.POOLER_SERVER_CONN_KILL) {
                    @Override
                    public Injection inject(FaultEnvironment env, Random rnd) throws SQLException {
                        WorkerProcess w = Faults.leaderOrAny(env, rnd);
                        String app = "fenceline-worker-" + w.id();
                        // Held inside a batch, the leader's transaction sits on one server connection of the pooler.
                        boolean midBatch =
                                w.pauseInsideNextBatch(env.config.ttl().multipliedBy(2));
                        String killed;
                        try {
                            killed = terminateServerConnection(env, app);
                        } finally {
                            w.releasePause();
                        }
                        return Injection.onWorker(
                                w.id(),
                                killed + (midBatch ? " mid-batch" : " (between batches: no batch reached)"),
                                Duration.ofMillis(500),
                                () -> {});
                    }
                },
                new Fault() {
                    @Override
                    public String kind() {
                        return Faults.POSTGRES_FAILOVER;
                    }

                    @Override
                    public boolean available(FaultEnvironment env) {
                        return env.postgres.hasStandby();
                    }

                    @Override
                    public Injection inject(FaultEnvironment env, Random rnd) {
                        boolean async = env.config.postgres().standby() == PostgresSetup.Standby.ASYNCHRONOUS;
                        // Asynchronous: replication is held back for half a TTL first, as lag would, so the commits
                        // acknowledged meanwhile are not on the standby.
                        String what =
                                env.postgres.failover(async ? env.config.ttl().toMillis() / 2 : 0);
                        return Injection.of(
                                "primary",
                                (async ? "asynchronous" : "synchronous") + " standby: " + what + "; " + auditPath(env),
                                Duration.ofSeconds(1),
                                env.postgres::rebuildStandby);
                    }
                });
    }

    /**
     * No operator step after the failover: the foreign server {@code fencing_audit_loopback} still names the crashed
     * primary (here every server has a port of its own), and the trigger's audit must follow the promoted server by
     * itself (the history check counts every rogue write's audit row). Records which path the audit takes now.
     */
    private static String auditPath(FaultEnvironment env) {
        try (Connection c = env.dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT fencing.audit_path()");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return "audit path not re-pointed: " + rs.getString(1);
        } catch (SQLException e) {
            return "audit path unknown: " + e.getMessage();
        }
    }

    /**
     * Terminates ({@code pg_terminate_backend}, on the server that takes writes) the PgBouncer server connection
     * carrying {@code app}'s transaction: the one {@code SHOW SERVERS} lists as paired with a client of that
     * application_name (in transaction mode a server connection is paired only for a transaction); if there is none,
     * any of the pooler's server connections in a transaction (the runner never goes through the pooler, so that is a
     * worker's). Returns what it did.
     */
    private static String terminateServerConnection(FaultEnvironment env, String app) throws SQLException {
        List<Long> serverPids = new ArrayList<>();
        List<Long> paired = new ArrayList<>();
        for (Map<String, String> row : env.postgres.pooler().admin("SHOW SERVERS")) {
            String pid = row.get("remote_pid");
            if (pid != null && !pid.isBlank() && !"0".equals(pid)) {
                serverPids.add(Long.parseLong(pid));
                if (app.equals(row.get("application_name"))) {
                    paired.add(Long.parseLong(pid));
                }
            }
        }
        if (!paired.isEmpty()) {
            serverPids = paired;
        }
        if (serverPids.isEmpty()) {
            return "no server connection of the pooler open";
        }
        try (Connection c = env.dataSource.getConnection()) {
            Array pids = c.createArrayOf(
                    "int4", serverPids.stream().map(Long::intValue).toArray());
            // The one connection is chosen in a subquery: a target list is evaluated before ORDER BY / LIMIT.
            try (PreparedStatement ps = c.prepareStatement("SELECT pid, application_name, pg_terminate_backend(pid) "
                    + "FROM (SELECT pid, application_name FROM pg_stat_activity WHERE pid = ANY (?) "
                    + "AND xact_start IS NOT NULL ORDER BY (application_name = ?) DESC LIMIT 1) one")) {
                ps.setArray(1, pids);
                ps.setString(2, app);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        return "server connection pid " + rs.getLong(1) + " (application_name '" + rs.getString(2)
                                + "', of " + serverPids.size() + " the pooler holds) terminated";
                    }
                }
            }
        }
        return "none of the pooler's " + serverPids.size() + " server connection(s) was in a transaction";
    }

    /** A fault that needs the workers behind PgBouncer. */
    private abstract static class PoolerFault implements Fault {
        private final String kind;

        PoolerFault(String kind) {
            this.kind = kind;
        }

        @Override
        public String kind() {
            return kind;
        }

        @Override
        public boolean available(FaultEnvironment env) {
            return env.postgres.pooler() != null;
        }
    }
}
