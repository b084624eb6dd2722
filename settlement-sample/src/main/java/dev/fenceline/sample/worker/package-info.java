/**
 * The settlement worker: a {@code dev.fenceline.task.LeaderTask} whose runs each settle one batch
 * ({@code SettlementWork}) only while this worker's leadership is valid, in one fenced transaction at its term;
 * {@code WorkerEvents} writes the history file, the meters and /health.
 *
 * <p>Invariants: validity is checked before every batch, but it is a hint; the fenced transaction in PostgreSQL
 * decides. A term that is not above the database's mark is never used to write (the task raises the etcd term floor
 * and campaigns again). Every batch attempt ends in the history file with exactly one outcome: committed, rejected,
 * failed or unknown.
 */
package dev.fenceline.sample.worker;
