package dev.fenceline.sample.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.sample.db.Seeder;
import dev.fenceline.sample.demo.ChildProcess;
import dev.fenceline.sample.worker.Worker;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.PgBouncer;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The settlement fleet behind a real PgBouncer in transaction mode (2 server sessions shared by every client): three
 * worker processes on the writer's defaults settle payments while the leader is frozen with SIGSTOP
 * inside its work (updates written, not committed) three times, each time for longer than its TTL, until a new leader
 * has taken over and its first write has advanced the mark. Each frozen batch must end without committing (the
 * advance terminated its server session). Afterwards {@code fenceline verify}, {@code status} and {@code audit}, also
 * through the pooler, see every payment settled exactly once and every rejected batch audited, and nothing of the
 * fence is left on PostgreSQL: no fence advisory lock on any backend, no entered transaction.
 */
@ExtendWith({PostgresExtension.class, EtcdClusterExtension.class})
class SettlementThroughPoolerIT {
    private static final int FREEZES = 3;
    /** A round can miss (the leader changes before it reaches its next batch); bounded retries. */
    private static final int MAX_ROUNDS = 6;

    private static final int INITIAL_PAYMENTS = 1_500;
    private static final int MIN_PENDING_BEFORE_FREEZE = 300;
    private static final int TOP_UP = 800;
    /** The fence's advisory lock namespace (pg_locks.classid of every fence lock). */
    private static final long FENCE_LOCK_CLASSID = 1178946115L;

    private static final Pattern MARKER =
            Pattern.compile(Pattern.quote(Worker.PAUSE_MARKER) + " worker=(\\S+) term=(\\d+) batch_key=(\\S+)");
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One freeze of a leader inside its batch, and what became of that batch. */
    record Freeze(
            String worker,
            long term,
            String batchKey,
            String nextLeader,
            long nextTerm,
            long terminatedSessions,
            String outcome) {}

    @Test
    void workersBehindATransactionPoolerSettleEveryPaymentOnceThroughFreezesOfTheLeaderInsideItsWork(
            TestDatabase db, EtcdCluster etcd) throws Exception {
        long t0 = System.nanoTime();
        try (PgBouncer bouncer = PgBouncer.start(
                        db.server(),
                        PgBouncer.Options.defaults().poolMode("transaction").defaultPoolSize(2));
                SampleProcesses s =
                        new SampleProcesses(db, etcd, "pooled", bouncer.jdbcUrl(db.name()) + "&user=" + db.user());
                ElectionAdmin admin = s.admin()) {
            // Set-up (schema, test payments) directly on PostgreSQL; the pooler is in the path of the workers and of
            // verify, status and audit.
            assertThat(s.cliDirect("migrate").exit()).isZero();
            assertThat(s.cliDirect("seed", "--payments", Integer.toString(INITIAL_PAYMENTS))
                            .exit())
                    .isZero();
            for (String id : new String[] {"w1", "w2", "w3"}) {
                s.startWorker(
                        id,
                        "--ttl-ms",
                        "3000",
                        "--batch-size",
                        "10",
                        "--interval-ms",
                        "30",
                        "--debug-pause-inside-batch-file",
                        s.dir.resolve(id + ".pause").toString());
            }

            List<Freeze> freezes = new ArrayList<>();
            Set<String> pausesSeen = new HashSet<>();
            long floor = 1;
            for (int round = 1; freezes.size() < FREEZES && round <= MAX_ROUNDS; round++) {
                if (s.pending() < MIN_PENDING_BEFORE_FREEZE) {
                    // the test's own loader, directly on PostgreSQL: the leader needs work to be frozen inside
                    Seeder.seed(db.dataSource(), TOP_UP, 100);
                }
                // 1. the current leader, once its first write has advanced the mark to its term
                AtomicReference<LeaderRecord> leader = new AtomicReference<>();
                long minTerm = floor;
                await("a leader at term >= " + minTerm + " whose first write advanced the mark")
                        .atMost(Duration.ofSeconds(60))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> SampleProcesses.leader(admin)
                                .filter(r -> r.term() >= minTerm)
                                .filter(r -> uncheckedMark(s) == r.term() && uncheckedBatches(s, r.term()) >= 1)
                                .map(r -> {
                                    leader.set(r);
                                    return true;
                                })
                                .orElse(false));

                // 2. freeze it INSIDE its next batch (updates written, not committed)
                ChildProcess frozen = s.worker(leader.get().leaderId());
                Path pause = s.dir.resolve(frozen.name() + ".pause");
                Files.writeString(pause, "pause");
                String line = frozen.awaitLine(
                        l -> l.startsWith(Worker.PAUSE_MARKER) && !pausesSeen.contains(l), Duration.ofSeconds(20));
                if (line == null) {
                    // it lost its leadership before its next batch: nothing frozen, try the next leader
                    Files.deleteIfExists(pause);
                    System.out.printf("round %d: %s did not reach its pause point; retrying%n", round, frozen.name());
                    continue;
                }
                pausesSeen.add(line);
                Matcher m = MARKER.matcher(line);
                assertThat(m.find()).as(line).isTrue();
                long frozenTerm = Long.parseLong(m.group(2));
                String key = m.group(3);
                frozen.signal("STOP");
                awaitStopped(frozen.pid(), true);
                Files.delete(pause); // once resumed, it goes on towards its commit
                System.out.printf(
                        "round %d: SIGSTOP %s inside batch %s of term %d (%d settled)%n",
                        round, frozen.name(), key.substring(0, Math.min(19, key.length())), frozenTerm, s.settled());

                // 3. longer than the TTL: a new leader takes over, and its first write advances the mark
                AtomicReference<LeaderRecord> next = new AtomicReference<>();
                await("a new leader above term " + frozenTerm)
                        .atMost(Duration.ofSeconds(60))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> SampleProcesses.leader(admin)
                                .filter(r -> r.term() > frozenTerm)
                                .map(r -> {
                                    next.set(r);
                                    return true;
                                })
                                .orElse(false));
                assertThat(next.get().leaderId()).isNotEqualTo(frozen.name());
                await("the new leader's first commit")
                        .atMost(Duration.ofSeconds(60))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> s.batchesOfTerm(next.get().term()) >= 1);
                assertThat(s.mark())
                        .as("the mark after the new leader's first write")
                        .isGreaterThanOrEqualTo(next.get().term());
                // The advance past the frozen term found the frozen transaction's fence lock through the pooler and
                // terminated its server session (a pooled server session has no client of its own to notice).
                long terminated = s.scalar("SELECT coalesce(sum(terminated_sessions), 0) FROM fencing.term_history "
                        + "WHERE resource = '" + SampleProcesses.ELECTION + "' AND term > " + frozenTerm
                        + " AND term <= " + next.get().term());

                // 4. resume the frozen worker: its batch must not commit
                frozen.signal("CONT");
                awaitStopped(frozen.pid(), false);
                AtomicReference<String> outcome = new AtomicReference<>();
                await("the frozen batch to end")
                        .atMost(Duration.ofSeconds(30))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> outcomeOf(s.history(frozen.name()), frozenTerm, key)
                                .map(o -> {
                                    outcome.set(o);
                                    return true;
                                })
                                .orElse(false));
                Freeze f = new Freeze(
                        frozen.name(),
                        frozenTerm,
                        key,
                        next.get().leaderId(),
                        next.get().term(),
                        terminated,
                        outcome.get());
                System.out.printf(
                        "round %d: SIGCONT %s; leader now %s (term %d, %d older session(s) terminated by the "
                                + "advance); the frozen batch ended %s%n",
                        round, frozen.name(), f.nextLeader(), f.nextTerm(), f.terminatedSessions(), f.outcome());
                assertThat(f.outcome()).as(f.toString()).isIn("rejected", "unknown");
                assertThat(f.terminatedSessions()).as(f.toString()).isPositive();
                assertThat(s.scalar("SELECT count(*) FROM settlement.settlement_batch WHERE idempotency_key = '" + key
                                + "' AND term = " + frozenTerm))
                        .as("the frozen batch did not commit: " + f)
                        .isZero();
                freezes.add(f);
                floor = next.get().term();
            }
            assertThat(freezes).as("freezes of the leader inside its work").hasSize(FREEZES);
            List<Freeze> rejected =
                    freezes.stream().filter(f -> f.outcome().equals("rejected")).toList();
            assertThat(rejected)
                    .as("frozen batches rejected by PostgreSQL (not merely lost at commit)")
                    .isNotEmpty();
            for (Freeze f : rejected) {
                assertThat(s.scalar("SELECT count(*) FROM fencing.rejected_write WHERE resource = '"
                                + SampleProcesses.ELECTION + "' AND offered_term = " + f.term()
                                + " AND business_key = '" + f.batchKey() + "'"))
                        .as("audit row of " + f)
                        .isEqualTo(1);
            }

            // 5. drain, stop, and nothing of the fence is left on PostgreSQL
            await("all payments settled")
                    .atMost(Duration.ofSeconds(120))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> s.pending() == 0);
            s.stopWorkers();
            long total = s.scalar("SELECT count(*) FROM settlement.payment");
            long serverSessions = bouncer.admin("SHOW SERVERS").stream()
                    .filter(r -> db.name().equals(r.get("database")))
                    .count();
            System.out.printf(
                    "drained: %d payments; PgBouncer still holds %d server session(s) to %s%n",
                    total, serverSessions, db.name());
            assertThat(s.scalar("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = "
                            + FENCE_LOCK_CLASSID))
                    .as("fence advisory locks held by any backend")
                    .isZero();
            assertThat(s.scalar("SELECT count(*) FROM fencing.entered_transactions"))
                    .as("entered transactions")
                    .isZero();

            // 6. verify, status and audit through the pooler
            SampleProcesses.Result verify = s.cliWithHistories("verify");
            System.out.println(verify.stdout());
            assertThat(verify.exit()).as(verify.stdout() + verify.stderr()).isZero();
            assertThat(verify.stdout())
                    .startsWith("verify OK: all " + total + " payments settled exactly once")
                    .contains("rejected attempt(s) in the history files, all matched");
            SampleProcesses.Result status = s.cli("status", "--json");
            assertThat(status.exit()).as(status.stdout() + status.stderr()).isZero();
            JsonNode st = JSON.readTree(status.stdout());
            assertThat(st.get("database_ok").asBoolean()).isTrue();
            assertThat(st.get("db_mark").asLong()).isEqualTo(s.mark());
            assertThat(st.get("payments_settled").asLong()).isEqualTo(total);
            SampleProcesses.Result audit = s.cli("audit", "rejected", "--format", "csv");
            assertThat(audit.exit()).as(audit.stderr()).isZero();
            for (Freeze f : rejected) {
                assertThat(audit.stdout()).contains(f.batchKey());
            }

            assertThat(s.settled()).isEqualTo(total);
            assertThat(s.scalar("SELECT sum(payment_count) FROM settlement.settlement_batch"))
                    .isEqualTo(total);
            assertThat(s.scalar("SELECT count(*) FROM settlement.payment p JOIN settlement.settlement_batch b "
                            + "ON b.id = p.settlement_batch_id WHERE p.fencing_term <> b.term"))
                    .isZero();
            System.out.printf(
                    "%d freezes (%d rejected and audited, %d outcome unknown), verify OK, %d s%n",
                    freezes.size(),
                    rejected.size(),
                    freezes.size() - rejected.size(),
                    (System.nanoTime() - t0) / 1_000_000_000L);
        }
    }

    private static long uncheckedMark(SampleProcesses s) {
        try {
            return s.mark();
        } catch (Exception e) {
            return -1;
        }
    }

    private static long uncheckedBatches(SampleProcesses s, long term) {
        try {
            return s.batchesOfTerm(term);
        } catch (Exception e) {
            return -1;
        }
    }

    /** The outcome the worker's history file reports for the batch {@code key} at {@code term}, once it has ended. */
    private static Optional<String> outcomeOf(Path history, long term, String key) throws IOException {
        if (!Files.exists(history)) {
            return Optional.empty();
        }
        for (String line : Files.readAllLines(history)) {
            JsonNode n;
            try {
                n = JSON.readTree(line);
            } catch (IOException e) {
                continue; // a line still being written
            }
            if (n != null
                    && "batch".equals(n.path("event").asText())
                    && "end".equals(n.path("phase").asText())
                    && n.path("term").asLong() == term
                    && key.equals(n.path("batch_key").asText())) {
                return Optional.of(n.path("outcome").asText());
            }
        }
        return Optional.empty();
    }

    /**
     * Waits (at most 5 s) until the kernel reports the process stopped (state T) or no longer stopped: signal delivery
     * is asynchronous, and the pause file must not disappear before the worker is really frozen.
     */
    private static void awaitStopped(long pid, boolean stopped) {
        Path stat = Path.of("/proc", Long.toString(pid), "stat");
        await("pid " + pid + (stopped ? " stopped" : " running"))
                .atMost(Duration.ofSeconds(5))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> {
                    String text = Files.readString(stat);
                    String state = text.substring(text.lastIndexOf(')') + 2, text.lastIndexOf(')') + 3);
                    return "T".equals(state) == stopped;
                });
    }
}
