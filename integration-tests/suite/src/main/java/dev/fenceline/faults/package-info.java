/**
 * The fault-injection suite: real worker processes, a real 3-member etcd and a real PostgreSQL, a seeded
 * schedule of faults with heal, and a checker over the recorded history and the database.
 *
 * <p>Invariants: every fault heals itself within a bounded time; every loop is bounded in count and time; all
 * traffic stays on 127.0.0.1; a run is reproducible from its printed seed; timings are reported, never asserted.
 */
package dev.fenceline.faults;
