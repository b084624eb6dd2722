package dev.fenceline.election.internal;

import static dev.fenceline.election.LeadershipState.CANDIDATE;
import static dev.fenceline.election.LeadershipState.CLOSED;
import static dev.fenceline.election.LeadershipState.FOLLOWER;
import static dev.fenceline.election.LeadershipState.LATENT;
import static dev.fenceline.election.LeadershipState.LEADER;
import static dev.fenceline.election.LeadershipState.LOST;
import static dev.fenceline.election.LeadershipState.SUSPECT;
import static dev.fenceline.election.internal.EtcdGateway.string;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionEvent;
import dev.fenceline.election.ElectionException;
import dev.fenceline.election.ElectionKeys;
import dev.fenceline.election.ElectionListener;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.election.LossReason;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.watch.WatchEvent;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The election state machine. All mutable state below the "serial-executor confined" line is touched only
 * from {@link #exec}; every trigger (start, watch event, lease news, timer, resign, close) is a task on it.
 * At most one etcd operation per election is in flight ({@link #opInFlight}); triggers that arrive meanwhile
 * set {@link #dirty} and cause one more evaluation afterwards.
 *
 * <p>One evaluation = one linearizable range read of the election's keys followed by a decision:
 * <ul>
 *   <li>holding a term and the record still carries our lease and nonce: stay (or resign if paused or asked
 *       to; or SUSPECT→LEADER if the lease keeper has confirmed a renewal since);</li>
 *   <li>holding a term but the record is gone or foreign: LOST;</li>
 *   <li>record present with our lease and the nonce of a campaign whose outcome we did not learn: we won
 *       that campaign (resolution of unknown outcomes);</li>
 *   <li>record present with our lease and an unknown nonce: a leftover of ours, delete it (guarded);</li>
 *   <li>record present otherwise: FOLLOWER, wait for the watch;</li>
 *   <li>record absent, not paused, not holding off, lease usable: campaign (CAS transaction).</li>
 * </ul>
 */
final class DefaultLeaderElection implements LeaderElection {
    private static final Logger log = LoggerFactory.getLogger(DefaultLeaderElection.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private enum Lifecycle {
        LATENT,
        STARTED,
        CLOSED
    }

    private final DefaultElectionSession session;
    private final ElectionConfig config;
    private final ElectionKeys keys;
    private final String candidateId;
    private final Map<String, String> metadata;
    private final SerialExecutor exec;
    private final LeaseKeeper keeper;
    private final EtcdGateway etcd;
    /** Every read and write of the election's keys. */
    private final ElectionStore store;

    private final ElectionMetrics.PerElection meters;
    private final AtomicReference<Lifecycle> lifecycle = new AtomicReference<>(Lifecycle.LATENT);
    private final List<ListenerEntry> listeners = new CopyOnWriteArrayList<>();
    private final Object monitor = new Object();
    private volatile LeadershipState state = LATENT;
    private volatile LeadershipImpl leadership;
    private volatile long lastTermSeen;

    // ---- serial-executor confined ----
    private boolean opInFlight;
    private boolean dirty;
    /** Campaigns whose transaction outcome is unknown, by nonce. */
    private final Map<String, ElectionDecision.InDoubt> unresolved = new HashMap<>();

    private RecordToDelete recordToDelete;
    private long holdOffUntilNanos;
    private boolean holdingOff;
    private long leaderAbsentSinceNanos = -1;
    /** Term whose record this candidate saw absent, and when it first did (deadline clock); -1 = present. */
    private long absentTerm = -1;

    private long absentSinceNanos = -1;
    /** The term whose vanished record this candidate last waited out (counted and logged once). */
    private long waitedOutTerm = -1;

    private final Backoff backoff;
    private ScheduledFuture<?> retryTask;
    /** The last successful read (null before the first); lets a delete event go straight to the CAS. */
    private KeysSnapshot lastSnapshot;
    /** The leader record of the latest read of the keys (null: none there), for {@link #observedLeader()}. */
    private volatile LeaderRecord observedLeader;

    /** The bytes of the record we hold (they contain its random nonce); serial-executor confined. */
    private byte[] heldRecord;

    /**
     * A guarded delete of the leader key: mod revision AND value must match. The value (with its random nonce)
     * makes it ours in any cluster history: after a coordinator rebuild a retried delete may reach the new
     * cluster before the change is detected, where the same mod revision can belong to someone else's record.
     */
    private record RecordToDelete(
            long leaseId, long modRevision, byte[] value, boolean withResignRequest, CompletableFuture<Void> done) {}

    DefaultLeaderElection(
            DefaultElectionSession session, String electionName, String candidateId, Map<String, String> metadata) {
        this.session = session;
        this.config = session.config();
        this.keys = config.keys(electionName);
        this.candidateId = candidateId;
        this.metadata = Map.copyOf(metadata);
        this.exec = new SerialExecutor(session.workPool());
        this.keeper = session.keeper();
        this.etcd = session.etcd();
        this.store = session.store();
        this.backoff = new Backoff(config.retryBackoffMin(), config.retryBackoffMax());
        this.meters = session.metrics()
                .forElection(
                        electionName,
                        candidateId,
                        this,
                        o -> ((DefaultLeaderElection) o).leaderGauge(),
                        o -> ((DefaultLeaderElection) o).termGauge());
    }

    // ------------------------------------------------------------------ public API

    @Override
    public String electionName() {
        return keys.election();
    }

    @Override
    public String candidateId() {
        return candidateId;
    }

    @Override
    public void start() {
        if (!lifecycle.compareAndSet(Lifecycle.LATENT, Lifecycle.STARTED)) {
            throw new ElectionException(
                    lifecycle.get() == Lifecycle.CLOSED ? "start() called after close()" : "start() called twice");
        }
        exec.execute(() -> {
            if (lifecycle.get() == Lifecycle.STARTED) {
                transition(CANDIDATE, "started", null);
                evaluate();
            }
        });
    }

    @Override
    public LeadershipState state() {
        return state;
    }

    @Override
    public Optional<Leadership> leadership() {
        return Optional.ofNullable(leadership);
    }

    @Override
    public Optional<LeaderRecord> observedLeader() {
        return Optional.ofNullable(observedLeader);
    }

    @Override
    public Leadership awaitLeadership(Duration timeout) throws InterruptedException, TimeoutException {
        long deadline = now() + timeout.toNanos();
        synchronized (monitor) {
            while (true) {
                LeadershipImpl l = leadership;
                if (state == LEADER && l != null && l.isValidNow()) {
                    return l;
                }
                if (state == CLOSED) {
                    throw new ElectionException("election '" + keys.election() + "' is closed: no leadership to await");
                }
                long left = deadline - now();
                if (left <= 0) {
                    throw new TimeoutException("candidate '" + candidateId + "' did not become leader of election '"
                            + keys.election() + "' within " + timeout.toMillis() + "ms (state " + state + ")");
                }
                TimeUnit.NANOSECONDS.timedWait(monitor, Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
            }
        }
    }

    @Override
    public void addListener(ElectionListener listener) {
        addListener(listener, session.listenerExecutor());
    }

    @Override
    public void addListener(ElectionListener listener, Executor executor) {
        if (listener == null || executor == null) {
            throw new ElectionException("addListener() needs a non-null listener and executor");
        }
        listeners.add(new ListenerEntry(listener, new SerialExecutor(executor)));
    }

    @Override
    public void removeListener(ElectionListener listener) {
        listeners.removeIf(e -> e.listener == listener);
    }

    @Override
    public CompletableFuture<Void> resign() {
        Lifecycle lc = lifecycle.get();
        if (lc == Lifecycle.LATENT) {
            throw new ElectionException("resign() called before start()");
        }
        if (lc == Lifecycle.CLOSED) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        // completed on the listener executor: what the caller chains onto it must not run on an election thread
        Runnable complete = () -> CallbackContext.deliver(session.listenerExecutor(), () -> done.complete(null));
        exec.execute(() -> {
            startHoldOff();
            if (leadership == null) {
                complete.run();
            } else {
                resignNow(LossReason.RESIGNED, "resign() called", false, false).whenComplete((v, e) -> complete.run());
            }
        });
        return done;
    }

    @Override
    public void close() {
        CompletableFuture<Void> done = closeAsync();
        if (CallbackContext.inside()) {
            // Called from a listener, a stage of lost()/resign(), or an election thread: waiting here could block
            // the very thread that has to finish the close. Validity already ended; the delete completes by itself.
            log.debug(
                    "election close() from a callback: not waiting for the record delete: election={} candidate={}",
                    keys.election(),
                    candidateId);
            return;
        }
        try {
            done.get(config.callTimeout().toMillis() * 2 + 100, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            log.warn(
                    "election close: record not confirmed deleted in time; it goes with the lease: election={} "
                            + "candidate={}",
                    keys.election(),
                    candidateId);
        }
    }

    /** Non-blocking close: the future completes when a held record is deleted (or immediately). */
    CompletableFuture<Void> closeAsync() {
        return closeAsync(true);
    }

    /**
     * @param deleteRecord false when the caller revokes the lease right after (session close): revoking
     *                     removes every record of the session in one request, validity already ended here
     */
    CompletableFuture<Void> closeAsync(boolean deleteRecord) {
        Lifecycle prev = lifecycle.getAndSet(Lifecycle.CLOSED);
        if (prev == Lifecycle.CLOSED) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        exec.execute(() -> {
            if (retryTask != null) {
                retryTask.cancel(false);
            }
            if (leadership != null) {
                resignNow(
                                LossReason.CLOSED,
                                deleteRecord ? "close() called" : "session closing: lease will be revoked",
                                false,
                                true,
                                deleteRecord)
                        .whenComplete((v, e) -> done.complete(null));
            } else if (deleteRecord && !unresolved.isEmpty()) {
                transition(CLOSED, "close() called", null);
                resolvePendingCampaignsOnClose(done);
            } else {
                transition(CLOSED, "close() called", null);
                done.complete(null);
            }
        });
        return done.whenComplete((v, e) -> {
            session.forget(this);
            meters.remove();
        });
    }

    /**
     * Closing while a campaign's outcome is unknown: if it committed, the record sits on a lease the session
     * keeps renewing and nobody else could lead until the session closes. One read decides: a record with our
     * lease and a pending campaign's nonce is deleted, guarded on its mod revision and exact bytes. A campaign
     * that commits only after this read is removed by the session, which deletes any record on its lease that
     * appears for an election it has no handle for.
     */
    private void resolvePendingCampaignsOnClose(CompletableFuture<Void> done) {
        store.readLeader(keys)
                .whenCompleteAsync(
                        (leader, e) -> {
                            if (e != null) {
                                log.warn(
                                        "closing: could not read whether a campaign with unknown outcome committed: election={} "
                                                + "error=\"{}\"; the session removes such a record when it sees it",
                                        keys.election(),
                                        EtcdFailure.describe(e));
                            }
                            Optional<StoredKey> mine = e == null
                                    ? ElectionDecision.recordToDeleteOnClose(leader, unresolved)
                                    : Optional.empty();
                            unresolved.clear();
                            if (mine.isEmpty()) {
                                done.complete(null);
                                return;
                            }
                            StoredKey kv = mine.get();
                            log.info(
                                    "closing: a campaign with unknown outcome had committed; deleting its record: election={} "
                                            + "candidate={} mod_revision={}",
                                    keys.election(),
                                    candidateId,
                                    kv.modRevision());
                            recordToDelete = new RecordToDelete(kv.lease(), kv.modRevision(), kv.value(), false, done);
                            if (!opInFlight) {
                                deleteRecord();
                            } else {
                                dirty = true;
                            }
                        },
                        exec);
    }

    @Override
    public String toString() {
        return "LeaderElection{election=" + keys.election() + ", candidate=" + candidateId + ", state=" + state
                + ", leadership=" + leadership + "}";
    }

    // ------------------------------------------------------------------ triggers (any thread)

    /** Re-evaluate soon. */
    void poke() {
        exec.execute(this::evaluate);
    }

    /**
     * The session's periodic check: an election without a term re-reads unless an operation is already in
     * flight. This, not the watch, bounds how late a follower notices an expired leader (see the session).
     */
    void pollIfWaiting() {
        exec.execute(() -> {
            if (lifecycle.get() == Lifecycle.STARTED && leadership == null && !opInFlight && recordToDelete == null) {
                evaluate();
            }
        });
    }

    void onWatchEvent(WatchEvent event) {
        exec.execute(() -> {
            LeadershipImpl l = leadership;
            KeyValue kv = event.getKeyValue();
            if (lifecycle.get() == Lifecycle.CLOSED) {
                // A campaign with unknown outcome committed after close() read the key: give the record back.
                if (event.getEventType() == WatchEvent.EventType.PUT
                        && l == null
                        && recordToDelete == null
                        && kv.getLease() != 0
                        && kv.getLease() == keeper.view().leaseId()
                        && string(kv.getKey()).equals(keys.leader())) {
                    recordToDelete = new RecordToDelete(
                            kv.getLease(),
                            kv.getModRevision(),
                            kv.getValue().getBytes(),
                            false,
                            new CompletableFuture<>());
                    if (!opInFlight) {
                        deleteRecord();
                    } else {
                        dirty = true;
                    }
                }
                return;
            }
            // Our own campaign transaction (record + term at one revision) needs no re-read.
            if (l != null
                    && event.getEventType() == WatchEvent.EventType.PUT
                    && kv.getModRevision() == l.recordModRevision) {
                return;
            }
            // Fast path for handover: the leader key was deleted and our last read is otherwise current, so try
            // the CAS at once (saves one linearizable read). If anything else changed, the compares fail and the
            // normal read-decide path runs. The transaction remains the only arbiter. Not with leaseLossHoldOff: the
            // resign marker arrives as a later event of the same transaction, so only a read tells a resign from a
            // loss.
            if (event.getEventType() == WatchEvent.EventType.DELETE
                    && l == null
                    && !opInFlight
                    && recordToDelete == null
                    && config.leaseLossHoldOff().isZero()
                    && lifecycle.get() == Lifecycle.STARTED
                    && lastSnapshot != null
                    && !lastSnapshot.paused
                    && lastSnapshot.epoch
                            == etcd.history().mark().epoch() // never CAS with revisions of an older history
                    && !(holdingOff && holdOffUntilNanos - now() > 0)
                    && string(kv.getKey()).equals(keys.leader())) {
                LeaseKeeper.View lease = keeper.view();
                if (lease.health() == LeaseKeeper.Health.HEALTHY) {
                    KeysSnapshot s = lastSnapshot;
                    lastSnapshot = null; // used once
                    s.leader = null; // what the event says; everything else as last read
                    s.record = null;
                    decideOn(s);
                    return;
                }
            }
            evaluate();
        });
    }

    /**
     * The session saw another etcd history (see {@link ClusterHistory}): re-read. A pending guarded delete
     * targets a record of the old history (its compare revision could match a stranger's record in the new
     * one), so it is dropped; a leftover of ours in the new history is found and deleted by the re-read.
     */
    void onClusterChanged() {
        exec.execute(() -> {
            if (recordToDelete != null) {
                recordToDelete.done().complete(null);
                recordToDelete = null;
            }
            evaluate();
        });
    }

    void onLeaseSuspect(long leaseId, String reason) {
        exec.execute(() -> {
            LeadershipImpl l = leadership;
            if (l != null && l.leaseId() == leaseId && state == LEADER) {
                l.invalidate(); // stop work before anyone hears about it
                meters.suspectTransitions.increment();
                transition(SUSPECT, reason, l);
            }
        });
    }

    void onLeaseConfirmed(long leaseId) {
        exec.execute(() -> {
            if (state == SUSPECT) {
                evaluate(); // verify by linearizable read before resuming
            }
        });
    }

    void onLeaseGone(long leaseId, String reason) {
        exec.execute(() -> {
            unresolved.clear();
            if (recordToDelete != null && recordToDelete.leaseId() == leaseId) {
                recordToDelete.done().complete(null); // the record went with the lease
                recordToDelete = null;
            }
            LeadershipImpl l = leadership;
            if (l != null && l.leaseId() == leaseId) {
                loseTerm(LossReason.LEASE_EXPIRED, reason);
                transition(CANDIDATE, "waiting for a new lease", null);
            }
        });
    }

    // ------------------------------------------------------------------ the state machine (serial executor)

    private void evaluate() {
        if (opInFlight) {
            dirty = true;
            return;
        }
        if (session.isCrashed()) {
            return;
        }
        if (recordToDelete != null) {
            deleteRecord();
            return;
        }
        if (lifecycle.get() != Lifecycle.STARTED) {
            return;
        }
        dirty = false;
        opInFlight = true;
        long epoch = etcd.history().mark().epoch();
        store.read(keys)
                .whenCompleteAsync(
                        (resp, err) -> {
                            opInFlight = false;
                            if (err != null) {
                                log.debug(
                                        "election read failed: election={} error=\"{}\"",
                                        keys.election(),
                                        LeaseKeeper.describe(err));
                                scheduleRetry(backoff.next());
                            } else {
                                decide(resp, epoch);
                            }
                            if (dirty) {
                                evaluate();
                            }
                        },
                        exec);
    }

    /** After one read: parse, ask the pure decision, carry it out. */
    private void decide(List<StoredKey> resp, long epoch) {
        if (recordToDelete != null) {
            // A resign happened while this read was in flight: the read may still show our record. Deleting it
            // comes first; the next evaluation reads again.
            dirty = true;
            return;
        }
        if (lifecycle.get() != Lifecycle.STARTED) {
            return;
        }
        KeysSnapshot s;
        try {
            s = KeysSnapshot.of(keys, resp);
        } catch (IllegalArgumentException e) {
            // A malformed term or floor key must never let us guess a term: wait for an operator.
            log.error(
                    "election keys unusable, not campaigning: election={} problem=\"{}\"",
                    keys.election(),
                    e.getMessage());
            releaseIfHeld(LossReason.RECORD_GONE, "unusable keys: " + e.getMessage());
            transition(FOLLOWER, "unusable keys: " + e.getMessage(), null);
            scheduleRetry(config.retryBackoffMax());
            return;
        }
        backoff.reset();
        s.epoch = epoch;
        lastSnapshot = s;
        observedLeader = s.record;
        decideOn(s);
    }

    private void decideOn(KeysSnapshot s) {
        lastTermSeen = Math.max(lastTermSeen, s.term);
        long now = now(); // read after the response or event arrived: not before the record was gone
        if (s.leader != null) {
            absentTerm = -1;
            absentSinceNanos = -1;
        } else if (absentTerm != s.term || absentSinceNanos < 0) {
            absentTerm = s.term;
            absentSinceNanos = now;
        }
        LeaseKeeper.View lease = keeper.view();
        LeadershipImpl l = leadership;
        ElectionDecision.Decision d = ElectionDecision.decide(new ElectionDecision.Facts(
                s,
                l == null ? null : new ElectionDecision.Held(l.leaseId(), l.nonce(), l.term(), state == SUSPECT),
                new ElectionDecision.LeaseFacts(lease.leaseId(), lease.health(), lease.validUntilNanos()),
                unresolved,
                holdingOff,
                holdOffUntilNanos,
                config.leaseLossHoldOff().toNanos(),
                absentSinceNanos,
                now));
        apply(d, s, l, lease.leaseId());
    }

    private void apply(ElectionDecision.Decision d, KeysSnapshot s, LeadershipImpl l, long leaseId) {
        if (d.lost() != null) {
            loseTerm(d.lost(), d.lostWhy());
        }
        if (d.keepInDoubtAt() >= 0) {
            long keep = d.keepInDoubtAt();
            unresolved.values().removeIf(p -> p.termModRevision() != keep); // the term moved on: can never commit
        }
        if (d.holdOffOver()) {
            holdingOff = false;
        }
        if (s.leader != null) {
            leaderAbsentSinceNanos = -1;
        }
        ElectionDecision.Action action = d.action();
        if (action instanceof ElectionDecision.Stay || action instanceof ElectionDecision.ResumeLeader) {
            if (d.staleResignRequest() != null) {
                store.deleteResignRequest(keys, d.staleResignRequest().modRevision());
            }
            if (action instanceof ElectionDecision.ResumeLeader) {
                l.validate();
                transition(LEADER, "verified by linearizable read: record and lease still held", l);
            }
        } else if (action instanceof ElectionDecision.Resign r) {
            if (r.startHoldOff()) {
                startHoldOff();
            }
            String why = r.reason() == LossReason.PAUSED
                    ? "kill switch " + keys.paused() + " present"
                    : r.reason() == LossReason.RESIGN_REQUESTED
                            ? "resign requested via " + keys.resignRequest()
                            : r.why();
            resignNow(r.reason(), why, r.withResignRequest(), false);
        } else if (action instanceof ElectionDecision.AdoptCampaign a) {
            won(
                    a.record(),
                    a.leader().value(),
                    a.leader().modRevision(),
                    "campaign with unknown outcome resolved by read: it committed");
        } else if (action instanceof ElectionDecision.DeleteLeftover left) {
            // Bound to our lease but not a campaign we know: a leftover of ours (e.g. a resign whose delete
            // outcome was lost). Nobody else can use it and it would block everyone: delete it, guarded.
            recordToDelete = new RecordToDelete(
                    left.leader().lease(),
                    left.leader().modRevision(),
                    left.leader().value(),
                    false,
                    new CompletableFuture<>());
            deleteRecord();
        } else if (action instanceof ElectionDecision.Follow f) {
            transition(FOLLOWER, f.why(), null);
        } else if (action instanceof ElectionDecision.WaitOutOldLeader w) {
            if (waitedOutTerm != s.term) { // once per vanished record
                waitedOutTerm = s.term;
                meters.leaseLossHoldOffs.increment();
                log.info(
                        "leader record of term {} vanished without a resign marker (lease expired or revoked): not "
                                + "campaigning for {} ms so the old leader's local deadline passes first: election={} candidate={}",
                        s.term,
                        TimeUnit.NANOSECONDS.toMillis(w.remainingNanos()),
                        keys.election(),
                        candidateId);
            }
            transition(FOLLOWER, "waiting out the old leader's deadline (leaseLossHoldOff)", null);
            scheduleRetry(Duration.ofNanos(w.remainingNanos()));
        } else if (action instanceof ElectionDecision.HoldOff h) {
            transition(FOLLOWER, "holding off after resigning", null);
            scheduleRetry(Duration.ofNanos(h.remainingNanos()));
        } else if (action instanceof ElectionDecision.WaitForLease) {
            transition(CANDIDATE, "waiting for a lease", null); // leaseGranted pokes us
        } else if (action instanceof ElectionDecision.CannotCampaign c) {
            // Never wrap around or guess: an exhausted or absurd term space needs an operator.
            log.error("not campaigning: election={} problem=\"{}\"", keys.election(), c.problem());
            transition(FOLLOWER, "cannot issue a term: " + c.problem(), null);
            scheduleRetry(config.retryBackoffMax());
        } else if (action instanceof ElectionDecision.Campaign c) {
            if (leaderAbsentSinceNanos < 0) {
                leaderAbsentSinceNanos = now();
            }
            campaign(s, c.term(), leaseId);
        }
    }

    private void campaign(KeysSnapshot s, long term, long leaseId) {
        byte[] nonceBytes = new byte[12];
        RANDOM.nextBytes(nonceBytes);
        String nonce = HexFormat.of().formatHex(nonceBytes);
        LeaderRecord rec = new LeaderRecord(candidateId, term, leaseId, nonce, metadata, Instant.now());
        transition(CANDIDATE, "leader key absent: campaigning for term " + term, null);
        opInFlight = true;
        long termModRev = s.termModRevision;
        byte[] value = LeaderRecordCodec.encode(rec);
        store.campaign(keys, leaseId, value, term, termModRev, s.floorModRevision)
                .whenCompleteAsync(
                        (committedAt, e) -> {
                            opInFlight = false;
                            switch (ElectionDecision.outcome(committedAt, e)) {
                                case WON -> won(rec, value, committedAt.get(), "campaign won");
                                case LOST_RACE ->
                                    dirty = true; // compares failed: someone else moved first; re-read decides
                                case REJECTED -> {
                                    // etcd answered and rejected it (e.g. NOT_FOUND: our lease is gone): it did not
                                    // commit and never
                                    // will, so there is nothing to resolve.
                                    log.warn(
                                            "campaign rejected by etcd (not committed): election={} candidate={} term={} lease={} "
                                                    + "error=\"{}\"",
                                            keys.election(),
                                            candidateId,
                                            term,
                                            leaseId,
                                            EtcdFailure.describe(e));
                                    scheduleRetry(backoff.next());
                                }
                                case IN_DOUBT -> {
                                    // The transaction may still commit later. Remember the nonce; a later read that
                                    // finds our
                                    // lease + this nonce in the record means we won.
                                    unresolved.put(nonce, new ElectionDecision.InDoubt(leaseId, termModRev));
                                    log.warn(
                                            "campaign outcome unknown, will resolve by reading: election={} candidate={} term={} "
                                                    + "lease={} nonce={} error=\"{}\"",
                                            keys.election(),
                                            candidateId,
                                            term,
                                            leaseId,
                                            nonce,
                                            EtcdFailure.describe(e));
                                    scheduleRetry(backoff.next());
                                }
                            }
                            if (dirty) {
                                evaluate();
                            }
                        },
                        exec);
    }

    private void won(LeaderRecord rec, byte[] value, long recordModRevision, String reason) {
        unresolved.clear();
        backoff.reset();
        observedLeader = rec; // the winner knows its record before any later read shows it
        LeadershipImpl l = new LeadershipImpl(
                keys.election(),
                candidateId,
                rec.term(),
                rec.leaseId(),
                rec.nonce(),
                rec.acquiredAt(),
                recordModRevision,
                keeper,
                session.listenerExecutor());
        lastTermSeen = Math.max(lastTermSeen, rec.term());
        if (lifecycle.get() != Lifecycle.STARTED) {
            // closed while the campaign was in flight: give it straight back
            recordToDelete =
                    new RecordToDelete(rec.leaseId(), recordModRevision, value, false, new CompletableFuture<>());
            deleteRecord();
            return;
        }
        leadership = l;
        heldRecord = value;
        meters.won.increment();
        if (leaderAbsentSinceNanos >= 0) {
            meters.takeover.record(now() - leaderAbsentSinceNanos, TimeUnit.NANOSECONDS);
            leaderAbsentSinceNanos = -1;
        }
        if (state == LOST) {
            transition(CANDIDATE, "campaigning again", null);
        }
        if (keeper.view().validNow(rec.leaseId())) {
            l.validate();
            transition(LEADER, reason, l);
        } else {
            meters.suspectTransitions.increment();
            transition(SUSPECT, reason + ", but no renewal confirmed recently", l);
            keeperCheckLater();
        }
    }

    /** A SUSPECT that won needs the keeper's next confirmation; re-check after one renew interval too. */
    private void keeperCheckLater() {
        scheduleRetry(config.renewInterval());
    }

    /** Ends the held term voluntarily: invalidate first, then announce, then delete the record. */
    private CompletableFuture<Void> resignNow(
            LossReason reason, String why, boolean withResignRequest, boolean closing) {
        return resignNow(reason, why, withResignRequest, closing, true);
    }

    private CompletableFuture<Void> resignNow(
            LossReason reason, String why, boolean withResignRequest, boolean closing, boolean deleteRecord) {
        LeadershipImpl l = leadership;
        l.invalidate(); // stop work first
        leadership = null;
        transition(closing ? CLOSED : FOLLOWER, why, l);
        l.end(reason);
        meters.lost(reason.name());
        if (!deleteRecord) {
            return CompletableFuture.completedFuture(null);
        }
        RecordToDelete d = new RecordToDelete(
                l.leaseId(), l.recordModRevision, heldRecord, withResignRequest, new CompletableFuture<>());
        recordToDelete = d;
        if (!opInFlight) {
            deleteRecord();
        } else {
            dirty = true;
        }
        return d.done();
    }

    private void releaseIfHeld(LossReason reason, String why) {
        if (leadership != null) {
            resignNow(reason, why, false, false);
        }
    }

    private void loseTerm(LossReason reason, String why) {
        LeadershipImpl l = leadership;
        l.invalidate();
        leadership = null;
        transition(LOST, why, l);
        l.end(reason);
        meters.lost(reason.name());
    }

    private void deleteRecord() {
        RecordToDelete d = recordToDelete;
        opInFlight = true;
        store.deleteRecord(keys, d.modRevision(), d.value(), d.withResignRequest())
                .whenCompleteAsync(
                        (deleted, e) -> {
                            opInFlight = false;
                            if (recordToDelete == d) {
                                if (e == null) {
                                    recordToDelete = null;
                                    log.info(
                                            "leader record released: election={} candidate={} lease={} deleted={}",
                                            keys.election(),
                                            candidateId,
                                            d.leaseId(),
                                            deleted ? "yes" : "no (already gone or replaced)");
                                    d.done().complete(null);
                                    dirty = true;
                                } else {
                                    log.warn(
                                            "deleting leader record failed, retrying: election={} error=\"{}\"",
                                            keys.election(),
                                            EtcdFailure.describe(e));
                                    scheduleRetry(backoff.next());
                                }
                            }
                            if (dirty) {
                                evaluate();
                            }
                        },
                        exec);
    }

    private void startHoldOff() {
        holdingOff = true;
        holdOffUntilNanos = now() + config.resignHoldOff().toNanos();
    }

    private void scheduleRetry(Duration delay) {
        if (retryTask != null) {
            retryTask.cancel(false);
        }
        retryTask = session.schedule(this::poke, delay);
    }

    private void transition(LeadershipState to, String reason, LeadershipImpl l) {
        LeadershipState from = state;
        if (from == to) {
            return;
        }
        Transitions.check(from, to);
        state = to;
        long nanos = now();
        Instant wall = Instant.now();
        long term = l != null ? l.term() : 0;
        long lease = l != null ? l.leaseId() : keeper.view().leaseId();
        if (to == LEADER || to == SUSPECT || to == LOST || from == LEADER || from == SUSPECT) {
            log.info(
                    "election state change: election={} candidate={} from={} to={} term={} lease={} reason=\"{}\"",
                    keys.election(),
                    candidateId,
                    from,
                    to,
                    term,
                    lease,
                    reason);
        } else {
            log.debug(
                    "election state change: election={} candidate={} from={} to={} term={} lease={} reason=\"{}\"",
                    keys.election(),
                    candidateId,
                    from,
                    to,
                    term,
                    lease,
                    reason);
        }
        // Reported on the System.nanoTime() scale, which listeners and history files compare with.
        ElectionEvent event = new ElectionEvent(
                keys.election(),
                candidateId,
                from,
                to,
                term,
                lease,
                reason,
                keeper.clock().toSystemNanos(nanos),
                wall,
                keeper.clock().toSystemNanos(keeper.view().validUntilNanos()),
                l);
        for (ListenerEntry e : listeners) {
            e.deliver(event);
        }
        synchronized (monitor) {
            monitor.notifyAll();
        }
    }

    /** The deadline clock (counts host suspend); the scale of event times and validity deadlines. */
    private long now() {
        return keeper.clock().nanoTime();
    }

    private double leaderGauge() {
        LeadershipImpl l = leadership;
        return l != null && l.isValidNow() ? 1 : 0;
    }

    private double termGauge() {
        LeadershipImpl l = leadership;
        return l != null ? l.term() : lastTermSeen;
    }

    private static final class ListenerEntry {
        final ElectionListener listener;
        final SerialExecutor executor;

        ListenerEntry(ElectionListener listener, SerialExecutor executor) {
            this.listener = listener;
            this.executor = executor;
        }

        void deliver(ElectionEvent event) {
            executor.execute(() -> CallbackContext.run(() -> {
                try {
                    listener.onStateChange(event);
                } catch (RuntimeException e) {
                    log.warn(
                            "election listener threw; ignored: election={} listener={}",
                            event.electionName(),
                            listener,
                            e);
                }
            }));
        }
    }
}
