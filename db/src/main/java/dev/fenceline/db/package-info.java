/**
 * Database access for the fenced writer: HikariCP pools and jOOQ contexts ({@link dev.fenceline.db.Databases},
 * {@link dev.fenceline.db.DatabaseConfig}) and the jOOQ classes generated from the fencing migrations
 * ({@code dev.fenceline.db.generated}: migrate a throwaway PostgreSQL, then generate — never hand-written; committed
 * under {@code src/main/generated}, regenerated with {@code -Pjooq-codegen}, and checked against the migrations by
 * {@code GeneratedSourcesMatchMigrationsIT}).
 *
 * <p>Invariants: configuration is validated where it enters, with messages naming the property, the limit and
 * the value; every pooled connection carries {@code lock_timeout} and {@code idle_in_transaction_session_timeout}
 * in its startup packet, so a fenced connection can neither wait forever for a lock nor hold a transaction open
 * forever when its client is paused.
 */
@NullMarked
package dev.fenceline.db;

import org.jspecify.annotations.NullMarked;
