/**
 * Real infrastructure for tests, the demo and benchmarks, as local processes on 127.0.0.1.
 *
 * <p>Invariants:
 * <ul>
 *   <li>Every server binds to 127.0.0.1 on a port chosen free at start; nothing listens on other addresses.</li>
 *   <li>Nothing started here outlives the JVM that started it: a JVM shutdown hook stops servers gracefully,
 *       and a detached watchdog ({@link dev.fenceline.testkit.Reaper}) kills whatever is left if the JVM dies
 *       without running its hooks ({@code kill -9}, a surefire timeout).</li>
 *   <li>A missing prerequisite (no etcd, no PostgreSQL binaries, a port in use) fails at once with an
 *       {@link dev.fenceline.testkit.InfrastructureException} that says what is missing and how to fix it.</li>
 * </ul>
 *
 * <p>{@link dev.fenceline.testkit.PgBouncer} puts a real PgBouncer (Debian's package, installed by
 * {@code scripts/ensure-pgbouncer.sh}) between clients and a {@link dev.fenceline.testkit.PostgresServer}, in
 * transaction pooling by default: a client's transactions may run on different server sessions and share one with
 * other clients, so only transaction-scoped state ({@code SET LOCAL}, {@code set_config(..., true)}) is reliable
 * through it. Tests using it are skipped when the binary is missing, unless {@code FENCELINE_REQUIRE_PGBOUNCER=1}.
 *
 * <p>{@link dev.fenceline.testkit.PostgresStandby} starts a streaming standby of a server (synchronous with
 * {@code remote_apply}, or asynchronous); {@link dev.fenceline.testkit.PostgresServer#crash()} and
 * {@link dev.fenceline.testkit.PostgresServer#promote()} fail the primary over to it. Invariant: a synchronous
 * standby has every commit its primary acknowledged.
 */
package dev.fenceline.testkit;
