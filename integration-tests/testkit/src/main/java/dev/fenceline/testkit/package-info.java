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
 */
package dev.fenceline.testkit;
