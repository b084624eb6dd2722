package dev.fenceline.faults.workload;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A bounded stream of PENDING payments while faults run: {@code perTick} payments every {@code tickMs}, at most
 * {@code maxPayments} in all. Inserts the way the sample's seeder does (the payment table is fenced; a loader is not
 * the leader, so it uses the audited break-glass). Records the id of every payment whose insert committed.
 */
public final class PaymentInserter implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PaymentInserter.class);

    private final DataSource ds;
    private final int perTick;
    private final long tickMs;
    private final long maxPayments;
    private final List<Long> inserted = new ArrayList<>();
    private final AtomicBoolean running = new AtomicBoolean();
    private final java.util.Random rnd;
    private Thread thread;
    private volatile String lastError;

    public PaymentInserter(DataSource ds, int perTick, long tickMs, long maxPayments, long seed) {
        this.ds = ds;
        this.perTick = perTick;
        this.tickMs = tickMs;
        this.maxPayments = maxPayments;
        this.rnd = new java.util.Random(seed);
    }

    /** Inserts {@code n} payments now (synchronously). */
    public synchronized List<Long> insert(int n) throws SQLException {
        List<Long> ids = new ArrayList<>(n);
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try (Statement st = c.createStatement()) {
                st.execute("SET LOCAL fencing.break_glass = 'fault suite: loading PENDING payments'");
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO settlement.payment (merchant_id, amount_cents) VALUES (?, ?) RETURNING id")) {
                for (int i = 0; i < n; i++) {
                    ps.setInt(1, 1 + rnd.nextInt(20));
                    ps.setLong(2, 100 + rnd.nextInt(99_900));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        ids.add(rs.getLong(1));
                    }
                }
            }
            c.commit();
        }
        inserted.addAll(ids);
        return ids;
    }

    public void start() {
        running.set(true);
        thread = new Thread(this::loop, "payment-inserter");
        thread.setDaemon(true);
        thread.start();
    }

    private void loop() {
        while (running.get() && count() < maxPayments) {
            try {
                insert((int) Math.min(perTick, maxPayments - count()));
            } catch (SQLException e) {
                lastError = e.getMessage();
                log.debug("payment insert failed: {}", e.getMessage());
            }
            try {
                Thread.sleep(tickMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    public synchronized long count() {
        return inserted.size();
    }

    public synchronized List<Long> insertedIds() {
        return List.copyOf(inserted);
    }

    public String lastError() {
        return lastError;
    }

    @Override
    public void close() {
        running.set(false);
        if (thread != null) {
            thread.interrupt();
            try {
                thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
