/**
 * The fencing schema as Flyway migrations ({@code classpath:db/fencing}, schema {@code fencing}, history table
 * {@code fencing.fencing_schema_history}, so it coexists with the application's own Flyway). Versioned migrations
 * ({@code V*}) hold tables, roles and grants and are never edited once released; every function has its one current
 * definition in a repeatable migration ({@code R__*}), re-applied by Flyway whenever it changes.
 *
 * <p>Invariants the SQL upholds (the safety argument is at the top of {@code R__20_fencing_enter.sql}; a model of
 * it, checked by spin, in {@code model/}):
 * <ul>
 *   <li>Nothing the fence relies on outlives a transaction. A transaction is entered for a resource at term t
 *       while it holds the resource's fence lock (a transaction-level advisory lock) shared and read mark = t with a
 *       snapshot taken after the lock was granted; it keeps the lock until it ends.</li>
 *   <li>{@code fencing.high_water_mark.highest_accepted} only moves up, only inside an advance, and only while the
 *       advancing transaction holds the fence lock exclusively until it ends — so every transaction entered at an
 *       older term has ended first (the advance terminates them; a prepared one it waits for).</li>
 *   <li>A write to a protected table (or any partition or inheritance child of one) happens only in a transaction
 *       entered at its term (or by an audited break-glass of the session user), so no transaction of term t commits
 *       after one of a higher term committed.</li>
 *   <li>Application roles cannot change marks, history or audit rows except through the SECURITY DEFINER
 *       functions; the audit is append-only; every rejection is audited once.</li>
 *   <li>{@code fencing.guard()} decides the same in both implementations: PL/pgSQL and the optional native one in
 *       C ({@code migrations/native}, switched by {@code fencing.use_native_guard()} when the library loads); the C
 *       code holds only the common entering and calls the same {@code fencing.guard_slow()} for everything
 *       else.</li>
 *   <li>Applying the migrations twice is a no-op; {@code protect_table} never rewrites a table and never holds
 *       a lock longer than its {@code lock_timeout}; every wait in an advance is bounded by
 *       {@code advance_timeout}.</li>
 * </ul>
 *
 * <p>Module name {@code dev.fenceline.migrations}, as an {@code Automatic-Module-Name} rather than a
 * {@code module-info.java}: Flyway 13 has neither a module descriptor nor an {@code Automatic-Module-Name} to require,
 * and Flyway scans {@code classpath:db/fencing}, a resource folder that a named module would encapsulate.
 */
@NullMarked
package dev.fenceline.migrations;

import org.jspecify.annotations.NullMarked;
