/**
 * Fenced writes to PostgreSQL: a transaction carrying term {@code t} for a resource commits only if no transaction
 * carrying a higher term for that resource has committed before it.
 *
 * <h2>Invariants (enforced by PostgreSQL, schema {@code fencing}; see migrations V2 for the SQL)</h2>
 * <ol>
 *   <li>The mark {@code fencing.high_water_mark.highest_accepted} only increases, only inside
 *       {@code fencing.enter()}, and only while the advancing transaction holds the exclusive advisory lock
 *       {@code (1178946115, lock_key)}.</li>
 *   <li>A session is <em>entered</em> at term {@code t} iff its setting {@code fencing.entered_<lock_key>} is
 *       {@code t}; {@code enter()} sets it only after taking the session-level shared lock on the same key and
 *       reading {@code mark = t} with a snapshot taken after the lock was granted. Session advisory locks are never
 *       released while the setting is non-empty, so an entered session always holds the shared lock.</li>
 *   <li>To take the exclusive lock, an advance terminates every other session holding the shared lock, i.e. every
 *       session entered at an older term; a terminated session's open transaction aborts. Hence while a session
 *       entered at {@code t} is alive, {@code mark = t}.</li>
 *   <li>Protected tables carry a statement-level BEFORE trigger that lets a statement through only when the session is
 *       entered (and {@code fencing.term}, if set, equals the entered term); otherwise it enters with
 *       {@code fencing.term} or rejects (SQLSTATE FL001 stale / FL002 no term). So every write to a protected table
 *       happens in a session entered at the current term, and its transaction can commit only before the next
 *       advance commits.</li>
 * </ol>
 *
 * <h2>What the Java side adds</h2>
 * The {@link dev.fenceline.fencing.FencedWriter} caches, per physical pgjdbc connection (weakly, keyed by the
 * unwrapped {@link org.postgresql.PGConnection}), the term the session was entered at, and calls {@code enter()}
 * (autocommit) only when that differs from the token's term. The cache can only be wrong towards "not entered"
 * (a terminated session is a new physical connection next time), and a wrong "entered" would be caught by the
 * trigger anyway. Rejections are audited by the writer in a separate transaction ({@code fencing.record_rejection}),
 * because the rejected transaction's own writes are rolled back; trigger-mode rejections are audited by the trigger
 * via dblink. Input is validated before anything reaches the database.
 *
 * <p>Not a security boundary against a database user who deliberately forges {@code fencing.entered_*}, disables
 * triggers or sets {@code session_replication_role}: fencing protects against stale leaders and stray writers.
 */
package dev.fenceline.fencing;
