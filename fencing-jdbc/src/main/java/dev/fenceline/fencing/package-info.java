/**
 * Fenced writes to PostgreSQL: a transaction carrying term {@code t} for a resource commits only if no transaction
 * carrying a higher term for that resource has committed before it.
 *
 * <h2>Invariants (enforced by PostgreSQL, schema {@code fencing}; the SQL and its safety argument are in the
 * {@code migrations} module)</h2>
 * Nothing the fence relies on outlives a transaction. Per resource there is one mark,
 * {@code fencing.high_water_mark.highest_accepted}, and one advisory key {@code (1178946115, lock_key)}, the fence
 * lock.
 * <ol>
 *   <li>A transaction is <em>entered</em> at term {@code t} once it holds the fence lock (shared, transaction-level:
 *       held until the transaction ends, or until the savepoint it was taken in is rolled back together with that
 *       savepoint's writes) and, with a snapshot taken after the lock was granted, read {@code mark = t}.</li>
 *   <li>The mark only increases, only inside an advance, and only while the advancing transaction holds the fence
 *       lock exclusively, which it keeps until its commit is visible. To get it, an advance terminates every other
 *       backend holding the lock (the open transactions of older terms); a prepared transaction holding it makes the
 *       advance fail (FL005) rather than move the mark. So a transaction entered at {@code t} ends before an advance
 *       past {@code t} commits, or it was entered after, and then it read the higher mark and was rejected.</li>
 *   <li>Protected tables, with all their partitions and inheritance children, carry a statement-level BEFORE trigger
 *       (INSERT, UPDATE, DELETE, TRUNCATE) that enters the transaction at its term, {@code fencing.term} (advancing
 *       the mark when the term is newer, only for the resource named by {@code fencing.resource}), or rejects the
 *       statement: a stale term or the same term held by another leader id (FL001), no term (FL002). So every write
 *       to a protected table happens in a transaction entered at the current term, which commits, if at all, before
 *       the next advance commits.</li>
 * </ol>
 *
 * <h2>What the Java side adds</h2>
 * The {@link dev.fenceline.fencing.FencedWriter} keeps no fence state, in Java or on a server session. Every
 * transaction it runs starts with one statement of its own, sent with the transaction's BEGIN in one round trip:
 * {@code SELECT fencing.begin_write(...)}, which sets for this transaction only {@code lock_timeout},
 * {@code idle_in_transaction_session_timeout}, {@code statement_timeout}, {@code fencing.term},
 * {@code fencing.resource}, {@code fencing.leader_id} and {@code fencing.break_glass} (cleared), records the
 * transaction and returns the mark. Each of these is set locally because a server session may carry values another
 * client left on it (behind a pooler, or earlier code on a pooled connection), and they would otherwise count for this
 * transaction; and set locally, none of them stays behind for whoever uses the session next:
 * <ul>
 *   <li>READ COMMITTED, READ WRITE: the work's contract (a read-only default would refuse the work's writes and the
 *       advance). They can only be set before a transaction's first query, so {@code begin_write} checks them and
 *       refuses (FL014) a transaction that a session default made otherwise. That statement itself runs under the
 *       session's timeouts, and a very short one left there cancels it (57014, 55P03). In either case the writer
 *       rolls back (nothing was done) and from then on begins every transaction with
 *       {@code SET TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE} and {@code SET LOCAL} of its statement and
 *       lock timeouts, each a statement of its own, before {@code begin_write};</li>
 *   <li>the three timeouts, so that the waits of the transaction (for the fence lock, on a deposed leader's row locks,
 *       a leader paused inside it) are bounded by the writer's configuration, not by what the session carries;</li>
 *   <li>the fencing settings, so that the guard takes the token's term, resource and leader id for the transaction's,
 *       and never a break-glass;</li>
 *   <li>the mark read, because marks only rise: a mark above the term is certain staleness, rejected (rolled back,
 *       audited, {@link dev.fenceline.fencing.StaleTermException}) before the work runs. A mark that rises later is
 *       found by the guard at the work's first write. At the mark's term the statement enters the transaction (the
 *       fence lock, then the mark), so that the next advance ends it even before the work writes.</li>
 * </ul>
 * The writer's COMMIT is sent behind {@code fencing.check_writers_transaction()} in one message, so it commits
 * only the transaction {@code begin_write} began: work that ended the transaction itself and went on in another commits
 * nothing more through the writer (and that other transaction has no term, so its writes to protected tables are
 * rejected). Rejections are audited by the writer in a separate transaction ({@code fencing.record_rejection}),
 * because the rejected transaction's own writes are rolled back; the guard's rejections are audited by the guard via
 * dblink. Input is validated before anything reaches the database.
 *
 * <p>Not a security boundary against a database user who deliberately disables triggers or sets
 * {@code session_replication_role} (superusers and table owners): fencing protects against stale leaders and stray
 * writers.
 */
@NullMarked
package dev.fenceline.fencing;

import org.jspecify.annotations.NullMarked;
