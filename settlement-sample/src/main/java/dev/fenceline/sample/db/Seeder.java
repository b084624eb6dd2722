package dev.fenceline.sample.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * Inserts PENDING payments. {@code settlement.payment} is fenced for resource {@code settlement}, and a
 * test-data loader is not the leader: it writes through the documented, audited break-glass
 * ({@code SET LOCAL fencing.break_glass = '<reason>'}, logged once per statement in
 * {@code fencing.break_glass_log}). A production intake service would own its own table instead.
 */
public final class Seeder {
    public static final String BREAK_GLASS_REASON = "fenceline seed: loading PENDING test payments";
    private static final int CHUNK = 50_000;

    private Seeder() {}

    public static long seed(DataSource ds, long payments, int merchants) throws SQLException {
        long done = 0;
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try {
                while (done < payments) {
                    long n = Math.min(CHUNK, payments - done);
                    try (Statement st = c.createStatement()) {
                        st.execute("SET LOCAL fencing.break_glass = '" + BREAK_GLASS_REASON + "'");
                    }
                    try (PreparedStatement ps =
                            c.prepareStatement("INSERT INTO settlement.payment (merchant_id, amount_cents) "
                                    + "SELECT 1 + (g % ?), 100 + ((g * 7919 + extract(epoch FROM clock_timestamp())::bigint) % 99900) "
                                    + "FROM generate_series(1, ?) AS g")) {
                        ps.setInt(1, merchants);
                        ps.setLong(2, n);
                        ps.executeUpdate();
                    }
                    c.commit();
                    done += n;
                }
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
        return done;
    }
}
