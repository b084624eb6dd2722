package dev.fenceline.sample.verify;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.sample.verify.VerifyInput.AttemptOutcome;
import dev.fenceline.sample.verify.VerifyInput.Batch;
import dev.fenceline.sample.verify.VerifyInput.PaymentSummary;
import dev.fenceline.sample.verify.VerifyInput.Rejection;
import dev.fenceline.sample.verify.VerifyInput.TermAccepted;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/** Loads {@link VerifyInput} in one REPEATABLE READ snapshot. */
public final class VerifyLoader {
    private static final ObjectMapper JSON = new ObjectMapper();

    private VerifyLoader() {}

    public static VerifyInput load(DataSource ds, String resource, List<Path> historyFiles)
            throws SQLException, IOException {
        List<AttemptOutcome> outcomes = readHistory(historyFiles);
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try {
                // One snapshot, set by the transaction's own first statement. Not Connection.setTransactionIsolation:
                // pgjdbc sends it as SET SESSION CHARACTERISTICS outside the transaction, which behind a
                // transaction-mode pooler (PgBouncer) may run on another server session than the reads below, leaving
                // them in READ COMMITTED and the isolation level behind for whichever client gets that session next.
                try (Statement st = c.createStatement()) {
                    st.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
                }
                long mark;
                try (PreparedStatement ps =
                        c.prepareStatement("SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = ?")) {
                    ps.setString(1, resource);
                    try (ResultSet rs = ps.executeQuery()) {
                        mark = rs.next() ? rs.getLong(1) : 0;
                    }
                }
                PaymentSummary summary;
                try (PreparedStatement ps = c.prepareStatement(
                                "SELECT count(*), "
                                        + "count(*) FILTER (WHERE status = 'PENDING'), count(*) FILTER (WHERE status = 'SETTLED'), "
                                        + "count(*) FILTER (WHERE status = 'SETTLED' AND settlement_batch_id IS NULL), "
                                        + "count(*) FILTER (WHERE status = 'PENDING' AND settlement_batch_id IS NOT NULL) FROM settlement.payment");
                        ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    summary = new PaymentSummary(
                            rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5));
                }
                List<Batch> batches = new ArrayList<>();
                try (PreparedStatement ps = c.prepareStatement(
                                "SELECT b.id, b.idempotency_key, b.term, b.leader_id, b.payment_count, "
                                        + "b.total_cents, b.commit_seq, b.committed_at, count(p.id), coalesce(sum(p.amount_cents), 0), "
                                        + "'sha256:' || encode(sha256(convert_to(string_agg(p.id::text, ',' ORDER BY p.id), 'UTF8')), 'hex'), "
                                        + "count(p.id) FILTER (WHERE p.fencing_term IS DISTINCT FROM b.term) "
                                        + "FROM settlement.settlement_batch b LEFT JOIN settlement.payment p ON p.settlement_batch_id = b.id "
                                        + "GROUP BY b.id ORDER BY b.commit_seq");
                        ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        batches.add(new Batch(
                                rs.getLong(1),
                                rs.getString(2),
                                rs.getLong(3),
                                rs.getString(4),
                                rs.getLong(5),
                                rs.getLong(6),
                                rs.getLong(7),
                                instant(rs.getTimestamp(8)),
                                rs.getLong(9),
                                rs.getLong(10),
                                rs.getString(11),
                                rs.getLong(12)));
                    }
                }
                List<TermAccepted> hist = new ArrayList<>();
                try (PreparedStatement ps = c.prepareStatement(
                        "SELECT term, leader_id, accepted_at FROM fencing.term_history WHERE resource = ? ORDER BY accepted_at, term")) {
                    ps.setString(1, resource);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            hist.add(new TermAccepted(rs.getLong(1), rs.getString(2), instant(rs.getTimestamp(3))));
                        }
                    }
                }
                List<Rejection> rejections = new ArrayList<>();
                try (PreparedStatement ps = c.prepareStatement(
                        "SELECT id, offered_term, highest_accepted, leader_id, business_key, "
                                + "table_name, rejected_at FROM fencing.rejected_write WHERE resource = ? ORDER BY id")) {
                    ps.setString(1, resource);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            rejections.add(new Rejection(
                                    rs.getLong(1),
                                    rs.getLong(2),
                                    rs.getLong(3),
                                    rs.getString(4),
                                    rs.getString(5),
                                    rs.getString(6),
                                    instant(rs.getTimestamp(7))));
                        }
                    }
                }
                return new VerifyInput(resource, mark, summary, batches, hist, rejections, outcomes);
            } finally {
                c.rollback();
            }
        }
    }

    static List<AttemptOutcome> readHistory(List<Path> files) throws IOException {
        List<AttemptOutcome> out = new ArrayList<>();
        if (files == null) {
            return out;
        }
        for (Path f : files) {
            try (BufferedReader r = Files.newBufferedReader(f, StandardCharsets.UTF_8)) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.isBlank()) {
                        continue;
                    }
                    JsonNode n;
                    try {
                        n = JSON.readTree(line);
                    } catch (IOException e) {
                        continue; // a line torn by kill -9 is not a fact
                    }
                    if ("batch".equals(n.path("event").asText())
                            && "end".equals(n.path("phase").asText())) {
                        out.add(new AttemptOutcome(
                                n.path("worker").asText(),
                                n.path("term").asLong(),
                                n.path("batch_key").asText(),
                                n.path("outcome").asText()));
                    }
                }
            }
        }
        return out;
    }

    private static Instant instant(Timestamp ts) {
        return ts == null ? Instant.EPOCH : ts.toInstant();
    }
}
