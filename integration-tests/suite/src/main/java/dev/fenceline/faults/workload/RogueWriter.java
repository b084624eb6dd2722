package dev.fenceline.faults.workload;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.faults.check.HistoryChecker;
import dev.fenceline.faults.history.Outcome;
import dev.fenceline.faults.history.RogueAttempt;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A writer that is no leader: an ordinary application login (a member of {@code fencing_app}, not a superuser, with
 * plain table privileges) that writes to tables protected for the run's resource with a stale term, no term, invalid
 * terms (0, negative, "null"), a term further above the mark than {@code max_term_jump}, through two-phase commit,
 * after {@code pg_advisory_unlock_all()}, straight into a partition and through a foreign-key cascade. Every attempt is
 * recorded ({@link #attempts()}, and {@code rogue.history.jsonl} in the run folder) with its own
 * {@code fencing.leader_id} ({@code rogue-...}), so its audit row can be counted; the checker requires every one to be
 * refused and audited exactly once ((g), (h)).
 *
 * <p>The sample has no partitioned or cascading protected table, so the writer adds its own, in schema {@code faults},
 * protected for the same resource: {@code faults.rogue_ledger} (partitioned, two partitions) and
 * {@code faults.rogue_entry}, a child of the unprotected {@code faults.rogue_account} with ON UPDATE / ON DELETE
 * CASCADE (rows 1..{@value #ACCOUNTS}, entry i of account i). What only a committed rogue write can leave behind is
 * listed by {@link #committedRogueRows(Connection)}.
 *
 * <p>Never does a rogue write carry a term the fence would accept (a term above the mark within max_term_jump): that
 * would be a leader's write, which the fence cannot and must not tell apart.
 */
public final class RogueWriter implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RogueWriter.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    static final int ACCOUNTS = 20;
    /** The safety-net timeout of every rogue statement; the fence decides at once, so it is never the outcome. */
    private static final int QUERY_TIMEOUT_SECONDS = 30;

    /** How a rogue write tries to get past the fence. */
    public enum Variant {
        STALE_TERM,
        NO_TERM,
        TERM_ZERO,
        TERM_NEGATIVE,
        TERM_NULL,
        TERM_OVER_JUMP,
        TWO_PHASE_COMMIT,
        AFTER_UNLOCK_ALL,
        INTO_PARTITION,
        FK_CASCADE_UPDATE,
        FK_CASCADE_DELETE
    }

    private final DataSource owner;
    private final String url;
    private final String resource;
    private final String role;
    private final Path historyFile;
    private final List<RogueAttempt> attempts = Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong ids = new AtomicLong();
    private final String setupNote;

    private RogueWriter(
            DataSource owner, String url, String resource, String role, Path historyFile, String setupNote) {
        this.owner = owner;
        this.url = url;
        this.resource = resource;
        this.role = role;
        this.historyFile = historyFile;
        this.setupNote = setupNote;
    }

    /**
     * Creates the login role and the suite's protected tables ({@code owner}: the schema owner's connections; {@code url}:
     * the JDBC URL, without user, of the server that takes writes).
     */
    public static RogueWriter create(DataSource owner, String url, String resource, Path runDir) {
        String role = "fenceline_rogue_" + ProcessHandle.current().pid() + "_"
                + Long.toHexString(System.nanoTime() & 0xFFFFFF);
        String note;
        try (Connection c = owner.getConnection();
                Statement st = c.createStatement()) {
            st.execute("CREATE ROLE " + role + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE IN ROLE fencing_app");
            st.execute("CREATE SCHEMA IF NOT EXISTS faults");
            st.execute(
                    "CREATE TABLE faults.rogue_ledger (id bigint NOT NULL, attempt text NOT NULL, part int NOT NULL) "
                            + "PARTITION BY LIST (part)");
            st.execute("CREATE TABLE faults.rogue_ledger_p0 PARTITION OF faults.rogue_ledger FOR VALUES IN (0)");
            st.execute("CREATE TABLE faults.rogue_ledger_p1 PARTITION OF faults.rogue_ledger FOR VALUES IN (1)");
            st.execute("CREATE TABLE faults.rogue_account (id bigint PRIMARY KEY)");
            st.execute("CREATE TABLE faults.rogue_entry (id bigint PRIMARY KEY, account_id bigint NOT NULL "
                    + "REFERENCES faults.rogue_account (id) ON UPDATE CASCADE ON DELETE CASCADE)");
            st.execute("INSERT INTO faults.rogue_account SELECT g FROM generate_series(1, " + ACCOUNTS + ") g");
            st.execute("INSERT INTO faults.rogue_entry SELECT g, g FROM generate_series(1, " + ACCOUNTS + ") g");
            String lit = "'" + resource.replace("'", "''") + "'";
            try {
                st.execute("SELECT fencing.protect_table('faults.rogue_ledger', " + lit + ")");
                note = "partitioned faults.rogue_ledger protected with its partitions";
            } catch (SQLException e) {
                // Without the event triggers (no superuser migration) a partitioned parent is refused: protect each
                // leaf.
                st.execute("SELECT fencing.protect_table('faults.rogue_ledger_p0', " + lit + ")");
                st.execute("SELECT fencing.protect_table('faults.rogue_ledger_p1', " + lit + ")");
                note = "partitions of faults.rogue_ledger protected one by one (" + e.getSQLState() + ")";
            }
            st.execute("SELECT fencing.protect_table('faults.rogue_entry', " + lit + ")");
            st.execute("GRANT USAGE ON SCHEMA settlement, faults TO " + role);
            st.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON settlement.settlement_batch, faults.rogue_ledger, "
                    + "faults.rogue_ledger_p0, faults.rogue_ledger_p1 TO " + role);
            st.execute("GRANT USAGE ON SEQUENCE settlement.commit_seq TO " + role);
            // Only the parent: the cascade into the protected child runs as that table's owner.
            st.execute("GRANT SELECT, UPDATE, DELETE ON faults.rogue_account TO " + role);
        } catch (SQLException e) {
            throw new IllegalStateException(
                    "cannot set up the rogue writer (role " + role + ", schema faults): " + e, e);
        }
        log.info("rogue writer: role {}; {}", role, note);
        return new RogueWriter(owner, url, resource, role, runDir.resolve("rogue.history.jsonl"), note);
    }

    public String role() {
        return role;
    }

    public String setupNote() {
        return setupNote;
    }

    public List<RogueAttempt> attempts() {
        synchronized (attempts) {
            return List.copyOf(attempts);
        }
    }

    /** The mark and max_term_jump now, read by the owner: what a stale and an over-jumped term are measured from. */
    public long[] markAndMaxJump() throws SQLException {
        try (Connection c = owner.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT (SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = ?), "
                                + "(SELECT value::bigint FROM fencing.settings WHERE name = 'max_term_jump')")) {
            ps.setString(1, resource);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new long[] {rs.getLong(1), rs.wasNull() ? 1_000_000 : rs.getLong(2)};
            }
        }
    }

    /** A connection as the rogue role. */
    public Connection connect(String applicationName) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", role);
        p.setProperty("ApplicationName", applicationName);
        p.setProperty("connectTimeout", "10");
        return DriverManager.getConnection(url, p);
    }

    /**
     * One rogue write of {@code variant} on {@code c} (null: connect first), recorded; returns the connection to use
     * next (a new one after this one broke), or null.
     */
    public Connection attempt(
            Connection c,
            Variant variant,
            long mark,
            long maxJump,
            Random rnd,
            int faultIndex,
            boolean flood,
            String applicationName) {
        long n = ids.incrementAndGet();
        String id = HistoryChecker.ROGUE_PREFIX + faultIndex + "-" + (flood ? "f" : "") + n;
        String term = term(variant, mark, maxJump, rnd);
        String table;
        String sql;
        switch (variant) {
            case INTO_PARTITION -> {
                int part = rnd.nextInt(2);
                table = "faults.rogue_ledger_p" + part;
                sql = "INSERT INTO " + table + " (id, attempt, part) VALUES (" + n + ", '" + id + "', " + part + ")";
            }
            case FK_CASCADE_UPDATE -> {
                table = "faults.rogue_account";
                sql = "UPDATE faults.rogue_account SET id = id + 1000000 WHERE id = " + (1 + rnd.nextInt(ACCOUNTS));
            }
            case FK_CASCADE_DELETE -> {
                table = "faults.rogue_account";
                sql = "DELETE FROM faults.rogue_account WHERE id = " + (1 + rnd.nextInt(ACCOUNTS));
            }
            default -> {
                table = "settlement.settlement_batch";
                sql = "INSERT INTO settlement.settlement_batch (id, idempotency_key, term, leader_id, payment_count, "
                        + "total_cents) VALUES (" + -n + ", '" + id + "', 1, '" + id + "', 1, 0)";
            }
        }
        long start = System.nanoTime();
        Outcome outcome;
        String state = null;
        String detail = null;
        Connection conn = c;
        try {
            if (conn == null) {
                conn = connect(applicationName);
            }
            try (Statement st = conn.createStatement()) {
                st.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
                if (variant == Variant.AFTER_UNLOCK_ALL) {
                    st.execute("SELECT pg_advisory_unlock_all()");
                }
                st.execute("BEGIN");
                try {
                    st.execute("SELECT set_config('fencing.leader_id', '" + id + "', true)");
                    if (term != null) {
                        st.execute("SELECT set_config('fencing.resource', '" + resource.replace("'", "''")
                                + "', true), " + "set_config('fencing.term', '" + term + "', true)");
                    }
                    st.execute(sql);
                    if (variant == Variant.TWO_PHASE_COMMIT) {
                        st.execute("PREPARE TRANSACTION '" + id + "'");
                        st.execute("COMMIT PREPARED '" + id + "'");
                    } else {
                        st.execute("COMMIT");
                    }
                    outcome = Outcome.COMMITTED;
                } catch (SQLException e) {
                    rollbackQuietly(conn, variant == Variant.TWO_PHASE_COMMIT ? id : null);
                    throw e;
                }
            }
        } catch (SQLException e) {
            state = e.getSQLState();
            detail = String.valueOf(e.getMessage());
            if (state != null && RogueAttempt.FENCE_SQLSTATES.contains(state)) {
                outcome = Outcome.REJECTED;
            } else if (state == null || state.startsWith("08") || state.startsWith("57P")) {
                outcome = conn == null ? Outcome.FAILED : Outcome.UNKNOWN;
                closeQuietly(conn);
                conn = null;
            } else {
                outcome = Outcome.FAILED;
            }
        }
        record(new RogueAttempt(
                id,
                variant.name(),
                table,
                term,
                start,
                System.nanoTime(),
                outcome,
                state,
                detail == null ? null : detail.length() > 300 ? detail.substring(0, 300) : detail,
                flood,
                faultIndex));
        return conn;
    }

    /** The offered term of a variant (text, as set in fencing.term; null: none). Never one the fence would accept. */
    static String term(Variant v, long mark, long maxJump, Random rnd) {
        long stale = Math.max(1, mark - 1); // at mark 1: the mark's own term with another leader id, refused too
        return switch (v) {
            case NO_TERM -> null;
            case TERM_ZERO -> "0";
            case TERM_NEGATIVE -> Long.toString(-1 - rnd.nextInt(100));
            case TERM_NULL -> "null";
            // Far enough above max_term_jump that the leaders' own advances meanwhile cannot bring it within reach.
            case TERM_OVER_JUMP -> Long.toString(mark + maxJump + 10_000);
            case FK_CASCADE_UPDATE, FK_CASCADE_DELETE -> rnd.nextBoolean() ? null : Long.toString(stale);
            default -> Long.toString(stale);
        };
    }

    private void record(RogueAttempt a) {
        attempts.add(a);
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", "rogue");
        line.put("id", a.id());
        line.put("variant", a.variant());
        line.put("table", a.table());
        line.put("term", a.offeredTerm());
        line.put("start_mono_ns", a.startMonoNs());
        line.put("end_mono_ns", a.endMonoNs());
        line.put("outcome", a.outcome().name());
        line.put("sqlstate", a.sqlState());
        line.put("error", a.detail());
        line.put("flood", a.flood());
        line.put("fault", a.faultIndex());
        try {
            synchronized (historyFile) {
                Files.writeString(
                        historyFile,
                        JSON.writeValueAsString(line) + "\n",
                        StandardCharsets.UTF_8,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot append to " + historyFile, e);
        }
    }

    private static void rollbackQuietly(Connection c, String preparedGid) {
        try (Statement st = c.createStatement()) {
            st.execute("ROLLBACK");
            if (preparedGid != null) {
                // Only there if PREPARE got through and COMMIT PREPARED failed: never leave it holding locks.
                st.execute("ROLLBACK PREPARED '" + preparedGid + "'");
            }
        } catch (SQLException ignored) {
            // no transaction, or the prepared one does not exist (the usual case: the write was refused)
        }
    }

    private static void closeQuietly(Connection c) {
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // already broken
            }
        }
    }

    /** What only a committed rogue write leaves behind (empty when schema faults is missing or nothing got through). */
    public static List<String> committedRogueRows(Connection c) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement st = c.createStatement()) {
            try (ResultSet rs = st.executeQuery("SELECT id, idempotency_key, term FROM settlement.settlement_batch "
                    + "WHERE idempotency_key LIKE '" + HistoryChecker.ROGUE_PREFIX + "%' OR id < 0")) {
                while (rs.next()) {
                    out.add("settlement.settlement_batch id " + rs.getLong(1) + " key " + rs.getString(2));
                }
            }
            try (ResultSet rs = st.executeQuery("SELECT to_regclass('faults.rogue_entry') IS NOT NULL")) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return out;
                }
            }
            try (ResultSet rs = st.executeQuery("SELECT tableoid::regclass::text, attempt FROM faults.rogue_ledger")) {
                while (rs.next()) {
                    out.add(rs.getString(1) + " row of " + rs.getString(2));
                }
            }
            try (ResultSet rs = st.executeQuery("SELECT g, e.account_id FROM generate_series(1, " + ACCOUNTS + ") g "
                    + "LEFT JOIN faults.rogue_entry e ON e.id = g WHERE e.account_id IS DISTINCT FROM g")) {
                while (rs.next()) {
                    long account = rs.getLong(2);
                    out.add("faults.rogue_entry " + rs.getLong(1)
                            + (rs.wasNull()
                                    ? " deleted by a cascade"
                                    : " moved to account " + account + " by a cascade"));
                }
            }
        }
        return out;
    }

    /** Ends the role's sessions, rolls back any of its prepared transactions, and drops it (best effort). */
    @Override
    public void close() {
        try (Connection c = owner.getConnection();
                Statement st = c.createStatement()) {
            st.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + role + "'");
            List<String> gids = new ArrayList<>();
            try (ResultSet rs = st.executeQuery("SELECT gid FROM pg_prepared_xacts WHERE owner = '" + role + "'")) {
                while (rs.next()) {
                    gids.add(rs.getString(1));
                }
            }
            for (String gid : gids) {
                st.execute("ROLLBACK PREPARED '" + gid.replace("'", "''") + "'");
            }
            st.execute("DROP OWNED BY " + role);
            st.execute("DROP ROLE IF EXISTS " + role);
        } catch (SQLException e) {
            log.warn("cannot drop rogue role {}: {}", role, e.toString());
        }
    }

    /** A bounded wait for threads the rogue nemeses started. */
    public static void join(List<Thread> threads, Duration bound) throws InterruptedException {
        long deadline = System.nanoTime() + bound.toNanos();
        for (Thread t : threads) {
            t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            if (t.isAlive()) {
                t.interrupt();
            }
        }
    }
}
