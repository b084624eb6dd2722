/**
 * The settlement worker: campaigns in the election and, only while its leadership is valid, settles batches
 * through the fenced writer with the leadership's term as the fencing token.
 *
 * <p>Invariants: the election's {@code isValidNow()} is checked before every batch, but it is a hint; the
 * fenced transaction in PostgreSQL decides. A term that is not above the database's mark is never used to write
 * (the worker raises the etcd term floor and campaigns again). Every batch attempt ends in the history file with
 * exactly one outcome: committed, rejected, failed or unknown.
 */
package dev.fenceline.sample.worker;
