package dev.fenceline.fencing;

import java.sql.SQLException;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The one table of the SQLSTATEs the writer acts on: what each fence code (class FL, raised by the fencing functions:
 * R__20_fencing_enter.sql lists them) means to the writer, which failures lost the connection, which ones a server
 * session's leftover settings cause, and which ones waiting cannot fix (with the fix).
 */
final class SqlStates {
    /** A stale term, or the same term held by another leader: rejected, audited. */
    static final String STALE_TERM = "FL001";
    /** A write to a protected table without a term for its resource. */
    static final String NO_TERM = "FL002";

    static final String INVALID_INPUT = "FL003";
    static final String UNKNOWN_RESOURCE = "FL004";
    /** An advance could not end the transactions of older terms within advance_timeout. */
    static final String ADVANCE_TIMED_OUT = "FL005";

    static final String TERM_JUMP = "FL009";
    /** The transaction about to commit is not the one fencing.begin_write began. */
    static final String NOT_THE_WRITERS_TRANSACTION = "FL013";
    /** The writer's transaction is not READ COMMITTED, READ WRITE (a default left on the session). */
    static final String TRANSACTION_MODE = "FL014";

    /**
     * What a server session's leftover settings can make of the writer's first statement: a transaction mode, a
     * timeout cancelling it, a {@code SET ROLE} to a role without the fence's rights (42501; a login really outside
     * fencing_app fails again after the explicit start, and is reported as such).
     */
    private static final Set<String> SPOILED_BY_SESSION = Set.of(TRANSACTION_MODE, "57014", "55P03", "42501");

    /** Failures that waiting cannot fix, each with what fixes it. */
    private static final Map<String, String> FIXES = Map.of(
            "3F000",
                    "schema fencing does not exist in this database: apply the fencing migrations"
                            + " (FencingMigrations.migrate) as the migration owner",
            "42P01", "a table of schema fencing is missing: apply the fencing migrations (FencingMigrations.migrate)",
            "42883",
                    "a function of schema fencing is missing (migrations not applied, or older than this library):"
                            + " apply the fencing migrations (FencingMigrations.migrate)",
            "42501",
                    "the login lacks a right the fence needs: make it a member of fencing_app"
                            + " (GRANT fencing_app TO <login>; docs/fencing.md, roles)",
            "28000", "the database refused the login: check the user name and pg_hba.conf",
            "28P01", "the database refused the password: check the password",
            "3D000", "the database named in the JDBC URL does not exist");

    private SqlStates() {}

    /** The connection is gone: class 08, or the server ended the session (57P01 to 57P03). */
    static boolean isConnectionFailure(SQLException e) {
        String s = e.getSQLState();
        return s != null && (s.startsWith("08") || s.equals("57P01") || s.equals("57P02") || s.equals("57P03"));
    }

    /** Settings another client left on the server session spoiled the writer's first statement. */
    static boolean spoiledBySession(SQLException e) {
        return SPOILED_BY_SESSION.contains(e.getSQLState());
    }

    static boolean isFenceCode(@Nullable String sqlState) {
        return sqlState != null && sqlState.startsWith("FL");
    }

    /** What fixes the first SQLSTATE in {@code t}'s cause chain when waiting cannot fix it; null otherwise. */
    static @Nullable String fixFor(@Nullable Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof SQLException e && e.getSQLState() != null) {
                return FIXES.get(e.getSQLState());
            }
        }
        return null;
    }

    /**
     * The exception for a fence code raised while entering or advancing (not FL001, whose rejection the caller
     * builds from the DETAIL, nor FL002 and FL013, which only a transaction's own statements raise).
     */
    static RuntimeException enteringFailure(FencingToken token, SQLException e) {
        return switch (e.getSQLState() == null ? "" : e.getSQLState()) {
            case INVALID_INPUT -> new IllegalArgumentException(e.getMessage(), e);
            case UNKNOWN_RESOURCE -> new UnknownResourceException(token.resource(), e);
            case ADVANCE_TIMED_OUT -> new FenceUnavailableException(e.getMessage(), e);
            case TERM_JUMP -> new TermJumpException(token.resource(), token.term(), e.getMessage(), e);
            default -> new FenceUnavailableException("could not enter " + token + ": " + e.getMessage(), e);
        };
    }

    /** The first {@link SQLException} in {@code t}'s cause chain, or null. */
    static @Nullable SQLException findSqlException(Throwable t) {
        for (Throwable x = t; x != null; x = x.getCause()) {
            if (x instanceof SQLException s) {
                return s;
            }
            if (x.getCause() == x) {
                break;
            }
        }
        return null;
    }
}
