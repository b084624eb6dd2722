/**
 * Fenced writes to PostgreSQL: a transaction carrying term {@code t} for a resource commits only if no transaction
 * carrying a higher term for that resource has committed before it.
 *
 * <h2>Invariants (enforced by PostgreSQL, schema {@code fencing}; the SQL and its safety argument are in
 * {@code R__20_fencing_enter.sql}, a model of them in {@code model/})</h2>
 * <ol>
 *   <li>The mark {@code fencing.high_water_mark.highest_accepted} only increases, only inside an advance, and only
 *       while the advancing transaction holds the exclusive advisory lock {@code (1178946115, lock_key)} and a row
 *       lock on the mark.</li>
 *   <li>A backend is <em>entered</em> at term {@code t} iff its setting {@code fencing.entered_<lock_key>} is
 *       {@code t}. Entering sets it only after taking the shared lock on the same key and reading {@code mark = t}
 *       with a snapshot taken after the lock was granted: for the session ({@code fencing.enter()}: the backend is
 *       also registered in {@code fencing.entered_session}) or for one transaction ({@code
 *       fencing.enter_transaction()}: the setting and the transaction-level lock end with it).</li>
 *   <li>Before the mark moves, an advance terminates every other backend holding the shared lock and every live
 *       registered backend (whatever locks it released), waits until they have exited, and waits until no prepared
 *       transaction holds the resource's lock or a write lock on one of its protected tables. Hence while a backend
 *       entered at {@code t} is alive, {@code mark = t}.</li>
 *   <li>Protected tables, with all their partitions and inheritance children, carry a statement-level BEFORE
 *       trigger that lets a statement through only when the backend is entered (and {@code fencing.term}, if set,
 *       equals the entered term); otherwise it enters the transaction with {@code fencing.term} (which advances a
 *       mark only for the resource named by {@code fencing.resource}) or rejects. So every write to a protected table
 *       happens in a backend entered at the current term, and its transaction can commit only before the next
 *       advance commits.</li>
 * </ol>
 *
 * <h2>What the Java side adds</h2>
 * In {@link dev.fenceline.fencing.EnterScope#SESSION} scope the {@link dev.fenceline.fencing.FencedWriter} caches,
 * per physical pgjdbc connection (weakly, keyed by the
 * unwrapped {@link org.postgresql.PGConnection}), the term the session was entered at, and calls {@code enter()}
 * (autocommit) only when that differs from the token's term. In {@link dev.fenceline.fencing.EnterScope#TRANSACTION}
 * scope (behind a transaction-mode pooler) it caches nothing and starts every transaction with
 * {@code fencing.enter_transaction()}. The cache can only be wrong towards "not entered"
 * (a terminated session is a new physical connection next time), and a wrong "entered" would be caught by the
 * trigger anyway. Rejections are audited by the writer in a separate transaction ({@code fencing.record_rejection}),
 * because the rejected transaction's own writes are rolled back; trigger-mode rejections are audited by the trigger
 * via dblink. Input is validated before anything reaches the database.
 *
 * <p>Not a security boundary against a database user who deliberately forges {@code fencing.entered_*}, disables
 * triggers or sets {@code session_replication_role} (superusers and table owners): fencing protects against stale leaders and stray writers.
 */
package dev.fenceline.fencing;
