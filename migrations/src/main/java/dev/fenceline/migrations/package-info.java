/**
 * The fencing schema as Flyway migrations ({@code classpath:db/fencing}, schema {@code fencing}, history table
 * {@code fencing.fencing_schema_history}, so it coexists with the application's own Flyway).
 *
 * <p>Invariants the SQL upholds (the safety argument is at the top of {@code V2__fencing_functions.sql}):
 * <ul>
 *   <li>{@code fencing.high_water_mark.highest_accepted} only moves up, only inside {@code fencing.enter()}, and
 *       only while the advancing transaction holds the resource's exclusive advisory lock — which it gets only
 *       after every session entered at an older term has been terminated.</li>
 *   <li>A write to a protected table commits only from a session entered at the current term (or an audited
 *       break-glass), so no transaction of term t commits after one of a higher term committed.</li>
 *   <li>Application roles cannot change marks, history or audit rows except through the SECURITY DEFINER
 *       functions; the audit is append-only.</li>
 *   <li>{@code fencing.guard()} decides the same in both implementations: PL/pgSQL (V2) and the optional native
 *       one in C ({@code migrations/native}, switched by {@code fencing.use_native_guard()} when the library loads);
 *       the C code holds only the fast path and calls the same {@code fencing.guard_slow()} for everything else.</li>
 *   <li>Applying the migrations twice is a no-op; {@code protect_table} never rewrites a table and never holds
 *       a lock longer than its {@code lock_timeout}.</li>
 * </ul>
 */
package dev.fenceline.migrations;
