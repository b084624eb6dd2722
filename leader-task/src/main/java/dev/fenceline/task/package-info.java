/**
 * A fenced leader task: a unit of work run repeatedly only while leader, each run ONE fenced transaction at the
 * leadership's term. Built on {@code dev.fenceline.election} (who may run) and {@code dev.fenceline.fencing} (whether
 * a run may commit: PostgreSQL decides).
 *
 * <h2>Invariants</h2>
 * <ol>
 *   <li>A run starts only while the election is LEADER with a valid leadership; it carries that term. SUSPECT, LOST
 *       and close() stop new runs; a run inside its transaction is decided by the fence, not by the task.</li>
 *   <li>The election's term floor is raised above the database's mark before campaigning, and a won term at or below
 *       the mark is resigned (after raising the floor) without writing: after a coordinator rebuilt from nothing,
 *       terms stay above the database.</li>
 *   <li>A run rejected as stale (audited once by the writer) makes the task resign; the election campaigns again.</li>
 *   <li>close() hands over: no new run, the current one finishes (bounded by handoverTimeout), then resign.</li>
 *   <li>Runs start when the schedule ({@code TaskSchedule}, default a fixed delay) says they are due, one at a time;
 *       starts a schedule missed are one run, never a burst.</li>
 *   <li>Decisions are pure functions ({@code TaskDecision}, {@code TaskSchedule}), table-tested with an injected
 *       clock.</li>
 * </ol>
 */
@NullMarked
package dev.fenceline.task;

import org.jspecify.annotations.NullMarked;
