package dev.fenceline.sample.audit;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/** The DBA reports behind {@code fenceline audit}. Column names are part of the documented output. */
public final class AuditReports {
    public static final List<String> REJECTED_COLUMNS = List.of(
            "id",
            "rejected_at",
            "resource",
            "offered_term",
            "highest_accepted",
            "leader_id",
            "reason",
            "source",
            "table_name",
            "operation",
            "business_key",
            "db_user",
            "application_name");
    public static final List<String> TERMS_COLUMNS = List.of(
            "resource",
            "term",
            "leader_id",
            "accepted_at",
            "batches",
            "payments",
            "first_commit",
            "last_commit",
            "rejected_writes");

    private AuditReports() {}

    /** Rejected writes of a resource, oldest first, optionally only those at or after {@code since}. */
    public static Table rejected(DataSource ds, String resource, Instant since) throws SQLException {
        String sql =
                "SELECT id, rejected_at, resource, offered_term, highest_accepted, leader_id, reason, source, table_name, operation, "
                        + "business_key, db_user, application_name FROM fencing.rejected_write WHERE resource = ? "
                        + (since != null ? "AND rejected_at >= ? " : "") + "ORDER BY rejected_at, id";
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, resource);
            if (since != null) {
                ps.setTimestamp(2, Timestamp.from(since));
            }
            return read(ps, REJECTED_COLUMNS);
        }
    }

    /** One row per accepted term: who held it, when it was accepted, what it committed, what was rejected at it. */
    public static Table terms(DataSource ds, String resource) throws SQLException {
        String sql = "SELECT h.resource, h.term, h.leader_id, h.accepted_at, "
                + "coalesce(b.batches, 0), coalesce(b.payments, 0), b.first_commit, b.last_commit, coalesce(r.rejected, 0) "
                + "FROM fencing.term_history h "
                + "LEFT JOIN (SELECT term, count(*) AS batches, sum(payment_count) AS payments, min(committed_at) AS first_commit, "
                + "           max(committed_at) AS last_commit FROM settlement.settlement_batch GROUP BY term) b ON b.term = h.term "
                + "LEFT JOIN (SELECT offered_term, count(*) AS rejected FROM fencing.rejected_write WHERE resource = ? "
                + "           GROUP BY offered_term) r ON r.offered_term = h.term "
                + "WHERE h.resource = ? ORDER BY h.term, h.accepted_at";
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, resource);
            ps.setString(2, resource);
            return read(ps, TERMS_COLUMNS);
        }
    }

    private static Table read(PreparedStatement ps, List<String> columns) throws SQLException {
        List<List<Object>> rows = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            ResultSetMetaData md = rs.getMetaData();
            while (rs.next()) {
                List<Object> r = new ArrayList<>();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    Object o = rs.getObject(i);
                    if (o instanceof Timestamp ts) {
                        o = ts.toInstant().toString();
                    } else if (o instanceof java.time.OffsetDateTime odt) {
                        o = odt.toInstant().toString();
                    } else if (o instanceof java.math.BigDecimal bd) {
                        o = bd.longValueExact();
                    } else if (o != null
                            && !(o instanceof Number)
                            && !(o instanceof String)
                            && !(o instanceof Boolean)) {
                        o = o.toString();
                    }
                    r.add(o);
                }
                rows.add(r);
            }
        }
        return new Table(columns, rows);
    }
}
