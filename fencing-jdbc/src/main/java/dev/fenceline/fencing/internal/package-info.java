/**
 * Implementation of the fenced writer; not API. The invariants are those of {@link dev.fenceline.fencing}: the
 * per-physical-connection cache only ever remembers what {@code fencing.enter()} answered on that very
 * session, and a session that dies is a new physical connection next time, so the cache can never claim a
 * fence the database does not hold.
 */
package dev.fenceline.fencing.internal;
