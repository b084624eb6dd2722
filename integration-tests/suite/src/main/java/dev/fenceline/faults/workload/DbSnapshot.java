package dev.fenceline.faults.workload;

import dev.fenceline.faults.history.CommittedBatch;
import dev.fenceline.faults.history.Payment;
import dev.fenceline.faults.history.RejectedWrite;
import dev.fenceline.faults.history.TermMark;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Reads the database's own record: batches in commit order (commit_seq), term marks, audit rows, payments, and what
 * only a committed rogue write can leave behind ({@link RogueWriter#committedRogueRows}).
 */
public record DbSnapshot(
        List<CommittedBatch> batches,
        List<TermMark> marks,
        List<RejectedWrite> rejected,
        List<Payment> payments,
        List<String> rogueRows) {

    public static DbSnapshot read(DataSource ds) throws SQLException {
        List<CommittedBatch> batches = new ArrayList<>();
        List<TermMark> marks = new ArrayList<>();
        List<RejectedWrite> rejected = new ArrayList<>();
        List<Payment> payments = new ArrayList<>();
        try (Connection c = ds.getConnection();
                Statement st = c.createStatement()) {
            c.setAutoCommit(false);
            st.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
            try (ResultSet rs =
                    st.executeQuery("SELECT id, idempotency_key, term, leader_id, payment_count, total_cents, "
                            + "committed_at FROM settlement.settlement_batch ORDER BY commit_seq")) {
                while (rs.next()) {
                    batches.add(new CommittedBatch(
                            rs.getLong(1),
                            rs.getString(2),
                            rs.getLong(3),
                            rs.getString(4),
                            rs.getInt(5),
                            rs.getLong(6),
                            instant(rs.getTimestamp(7))));
                }
            }
            try (ResultSet rs = st.executeQuery(
                    "SELECT resource, term, leader_id, accepted_at FROM fencing.term_history ORDER BY id")) {
                while (rs.next()) {
                    marks.add(
                            new TermMark(rs.getString(1), rs.getLong(2), rs.getString(3), instant(rs.getTimestamp(4))));
                }
            }
            try (ResultSet rs =
                    st.executeQuery("SELECT id, resource, offered_term, highest_accepted, leader_id, table_name, "
                            + "business_key, rejected_at FROM fencing.rejected_write ORDER BY id")) {
                while (rs.next()) {
                    rejected.add(new RejectedWrite(
                            rs.getLong(1),
                            rs.getString(2),
                            rs.getLong(3),
                            rs.getLong(4),
                            rs.getString(5),
                            rs.getString(6),
                            rs.getString(7),
                            instant(rs.getTimestamp(8))));
                }
            }
            try (ResultSet rs = st.executeQuery(
                    "SELECT id, status, settlement_batch_id, amount_cents FROM settlement.payment ORDER BY id")) {
                while (rs.next()) {
                    long batch = rs.getLong(3);
                    payments.add(
                            new Payment(rs.getLong(1), rs.getString(2), rs.wasNull() ? null : batch, rs.getLong(4)));
                }
            }
            List<String> rogueRows = RogueWriter.committedRogueRows(c);
            c.commit();
            return new DbSnapshot(batches, marks, rejected, payments, rogueRows);
        }
    }

    private static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }

    public static long mark(DataSource ds, String resource) {
        try (Connection c = ds.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = '"
                        + resource.replace("'", "''") + "'")) {
            return rs.next() ? rs.getLong(1) : 0;
        } catch (SQLException e) {
            return -1;
        }
    }

    public static long pending(DataSource ds) {
        try (Connection c = ds.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM settlement.payment WHERE status = 'PENDING'")) {
            return rs.next() ? rs.getLong(1) : -1;
        } catch (SQLException e) {
            return -1;
        }
    }

    /** Terminates every session whose application_name is {@code applicationName}; returns how many. */
    public static int terminateSessions(DataSource ds, String applicationName) {
        try (Connection c = ds.getConnection();
                java.sql.PreparedStatement ps =
                        c.prepareStatement("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
                                + "FROM pg_stat_activity WHERE application_name = ? AND pid <> pg_backend_pid()")) {
            ps.setString(1, applicationName);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        } catch (SQLException e) {
            return 0;
        }
    }

    /** Whether any session of {@code applicationName} is inside a transaction right now (i.e. mid-batch). */
    public static boolean inTransaction(DataSource ds, String applicationName) {
        try (Connection c = ds.getConnection();
                java.sql.PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_stat_activity "
                        + "WHERE application_name = ? AND xact_start IS NOT NULL AND state <> 'idle'")) {
            ps.setString(1, applicationName);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getLong(1) > 0;
            }
        } catch (SQLException e) {
            return false;
        }
    }
}
