package dev.fenceline.fencing.internal;

import dev.fenceline.fencing.FencedWriterConfig;
import dev.fenceline.fencing.FencingToken;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.jooq.DSLContext;

/**
 * The statements of the first fenced commit, run once inside a transaction the caller rolls back: nothing persists,
 * no mark moves, no term is entered (every setting is transaction-local).
 */
final class WarmUp {
    private WarmUp() {
    }

    static void run(Connection c, DSLContext workDsl, CurrentConnectionProvider current, FencingToken token,
                    FencedWriterConfig config) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = ?")) {
            ps.setString(1, token.resource());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
            }
        }
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT set_config('fencing.term', ?, true), set_config('fencing.resource', ?, true)")) {
            ps.setString(1, Long.toString(token.term()));
            ps.setString(2, token.resource());
            ps.execute();
        }
        Connection previous = current.bind(c);
        try {
            new FencedContextImpl(workDsl, token).dsl().selectOne().fetch();
        } finally {
            current.restore(previous);
        }
    }
}
