package dev.fenceline.election.internal;

import static dev.fenceline.election.LeadershipState.CANDIDATE;
import static dev.fenceline.election.LeadershipState.CLOSED;
import static dev.fenceline.election.LeadershipState.FOLLOWER;
import static dev.fenceline.election.LeadershipState.LEADER;
import static dev.fenceline.election.LeadershipState.LOST;
import static dev.fenceline.election.LeadershipState.SUSPECT;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionKeys;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.election.LossReason;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The election state machine: reads the election's keys, asks {@link ElectionDecision}, and carries the decision
 * out. Everything here runs on the election's serial executor; at most one etcd operation is in flight
 * ({@link EtcdOperationSlot}).
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
final class ElectionStateMachine {
    // the election's logger: these lines are the election's decisions
    private static final Logger log = LoggerFactory.getLogger(DefaultLeaderElection.class);

    private final DefaultElectionSession session;
    private final ElectionConfig config;
    private final ElectionKeys keys;
    private final String candidateId;
    private final LeaseKeeper keeper;
    private final ClusterHistory history;
    /** Every read and write of the election's keys. */
    private final ElectionStore store;

    private final StateAnnouncer announcer;
    private final EtcdOperationSlot slot;
    private final RecordRelease release;
    private final Campaigner campaigner;
    private final ElectionMetrics.PerElection meters;
    private final CampaignTiming timing;
    /** Whether the election is started and not closed. */
    private final BooleanSupplier started;

    private volatile @Nullable LeadershipImpl leadership;
    private volatile long lastTermSeen;
    /** The leader record of the latest read of the keys (null: none there). */
    private volatile @Nullable LeaderRecord observedLeader;

    /** The bytes of the record we hold (they contain its random nonce); set with {@link #leadership}. */
    private byte @Nullable [] heldRecord;
    /** The last successful read (null before the first); lets a delete event go straight to the CAS. */
    private @Nullable KeysSnapshot lastSnapshot;

    ElectionStateMachine(
            DefaultElectionSession session,
            ElectionKeys keys,
            String candidateId,
            Map<String, String> metadata,
            SerialExecutor exec,
            StateAnnouncer announcer,
            EtcdOperationSlot slot,
            RecordRelease release,
            ElectionMetrics.PerElection meters,
            BooleanSupplier started) {
        this.session = session;
        this.config = session.config();
        this.keys = keys;
        this.candidateId = candidateId;
        this.keeper = session.keeper();
        this.history = session.etcd().history();
        this.store = session.store();
        this.announcer = announcer;
        this.slot = slot;
        this.release = release;
        this.started = started;
        this.campaigner = new Campaigner(store, keys, candidateId, metadata, exec, slot, release, announcer, this::won);
        this.meters = meters;
        this.timing = new CampaignTiming(keys.election(), candidateId, config.resignHoldOff(), meters);
    }

    @Nullable
    LeadershipImpl leadership() {
        return leadership;
    }

    @Nullable
    LeaderRecord observedLeader() {
        return observedLeader;
    }

    Campaigner campaigner() {
        return campaigner;
    }

    /** The term held, else the highest term seen so far. */
    long term() {
        LeadershipImpl l = leadership;
        return l != null ? l.term() : lastTermSeen;
    }

    /** One read of the keys and a decision; a pending record delete goes first. */
    void evaluate() {
        if (slot.busy()) {
            slot.markDirty();
            return;
        }
        if (session.isCrashed()) {
            return;
        }
        if (release.pending()) {
            release.deleteNow();
            return;
        }
        if (!started.getAsBoolean()) {
            return;
        }
        slot.clearDirty();
        long epoch = history.mark().epoch();
        slot.run(() -> store.read(keys), (resp, err) -> {
            if (err != null) {
                log.debug("election read failed: election={} error=\"{}\"", keys.election(), LeaseKeeper.describe(err));
                slot.retryWithBackoff();
            } else {
                decide(resp, epoch);
            }
        });
    }

    /**
     * Fast path for handover: the leader key was deleted and the last read is otherwise current, so decide on it
     * at once (saves one linearizable read); the CAS's compares fail if anything else changed. The caller has
     * checked the event and that nothing is in flight.
     *
     * @return false when the last read cannot stand in for a new one (the caller evaluates instead)
     */
    boolean decideOnLeaderDeleted() {
        if (lastSnapshot == null
                || lastSnapshot.paused
                || lastSnapshot.epoch != history.mark().epoch() // never CAS with revisions of an older history
                || timing.holdingOffAt(now())
                || keeper.view().health() != LeaseKeeper.Health.HEALTHY) {
            return false;
        }
        KeysSnapshot s = lastSnapshot;
        lastSnapshot = null; // used once
        s.leader = null; // what the event says; everything else as last read
        s.record = null;
        decideOn(s);
        return true;
    }

    /** After one read: parse, ask the pure decision, carry it out. */
    private void decide(List<StoredKey> resp, long epoch) {
        if (release.pending()) {
            // A resign happened while this read was in flight: the read may still show our record. Deleting it
            // comes first; the next evaluation reads again.
            slot.markDirty();
            return;
        }
        if (!started.getAsBoolean()) {
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
            announcer.transition(FOLLOWER, "unusable keys: " + e.getMessage(), null);
            slot.retryAfter(config.retryBackoffMax());
            return;
        }
        slot.resetBackoff();
        s.epoch = epoch;
        lastSnapshot = s;
        observedLeader = s.record;
        decideOn(s);
    }

    private void decideOn(KeysSnapshot s) {
        lastTermSeen = Math.max(lastTermSeen, s.term);
        long now = now(); // read after the response or event arrived: not before the record was gone
        long absentSinceNanos = timing.absentSince(s.leader != null, s.term, now);
        LeaseKeeper.View lease = keeper.view();
        LeadershipImpl l = leadership;
        ElectionDecision.Decision d = ElectionDecision.decide(new ElectionDecision.Facts(
                s,
                l == null
                        ? null
                        : new ElectionDecision.Held(l.leaseId(), l.nonce(), l.term(), announcer.state() == SUSPECT),
                new ElectionDecision.LeaseFacts(lease.leaseId(), lease.health(), lease.validUntilNanos()),
                campaigner.inDoubt(),
                timing.holdingOff(),
                timing.holdOffUntilNanos(),
                config.leaseLossHoldOff().toNanos(),
                absentSinceNanos,
                now));
        apply(d, s, l, lease.leaseId());
    }

    private void apply(ElectionDecision.Decision d, KeysSnapshot s, @Nullable LeadershipImpl l, long leaseId) {
        LossReason lost = d.lost();
        if (lost != null) {
            loseTerm(lost, Objects.requireNonNullElse(d.lostWhy(), lost.name())); // decide() sets both
        }
        if (d.keepInDoubtAt() >= 0) {
            campaigner.keepInDoubtAt(d.keepInDoubtAt());
        }
        if (d.holdOffOver()) {
            timing.holdOffOver();
        }
        if (s.leader != null) {
            timing.leaderPresent();
        }
        ElectionDecision.Action action = d.action();
        if (action instanceof ElectionDecision.Stay || action instanceof ElectionDecision.ResumeLeader) {
            StoredKey stale = d.staleResignRequest();
            if (stale != null) { // best effort: a stale request left in place is found again by the next read
                var unused = store.deleteResignRequest(keys, stale.modRevision());
            }
            if (action instanceof ElectionDecision.ResumeLeader) {
                // decide() resumes only a held term, and l is the term it was given
                LeadershipImpl held = Objects.requireNonNull(l, "ResumeLeader without a held term");
                held.validate();
                announcer.transition(LEADER, "verified by linearizable read: record and lease still held", held);
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
            var unused = resignNow(r.reason(), why, r.withResignRequest(), false); // the release retries until done
        } else if (action instanceof ElectionDecision.AdoptCampaign a) {
            won(
                    a.record(),
                    a.leader().value(),
                    a.leader().modRevision(),
                    "campaign with unknown outcome resolved by read: it committed");
        } else if (action instanceof ElectionDecision.DeleteLeftover left) {
            // Bound to our lease but not a campaign we know: a leftover of ours (e.g. a resign whose delete
            // outcome was lost). Nobody else can use it and it would block everyone: delete it, guarded.
            StoredKey leftover = left.leader();
            release.release(
                    leftover.lease(), leftover.modRevision(), leftover.value(), false, new CompletableFuture<>());
        } else if (action instanceof ElectionDecision.Follow f) {
            announcer.transition(FOLLOWER, f.why(), null);
        } else if (action instanceof ElectionDecision.WaitOutOldLeader w) {
            timing.waitingOut(s.term, w.remainingNanos());
            announcer.transition(FOLLOWER, "waiting out the old leader's deadline (leaseLossHoldOff)", null);
            slot.retryAfter(Duration.ofNanos(w.remainingNanos()));
        } else if (action instanceof ElectionDecision.HoldOff h) {
            announcer.transition(FOLLOWER, "holding off after resigning", null);
            slot.retryAfter(Duration.ofNanos(h.remainingNanos()));
        } else if (action instanceof ElectionDecision.WaitForLease) {
            announcer.transition(CANDIDATE, "waiting for a lease", null); // leaseGranted pokes us
        } else if (action instanceof ElectionDecision.CannotCampaign c) {
            // Never wrap around or guess: an exhausted or absurd term space needs an operator.
            log.error("not campaigning: election={} problem=\"{}\"", keys.election(), c.problem());
            announcer.transition(FOLLOWER, "cannot issue a term: " + c.problem(), null);
            slot.retryAfter(config.retryBackoffMax());
        } else if (action instanceof ElectionDecision.Campaign c) {
            timing.campaigning(now());
            campaigner.campaign(s, c.term(), leaseId);
        }
    }

    private void won(LeaderRecord rec, byte[] value, long recordModRevision, String reason) {
        campaigner.forgetInDoubt();
        slot.resetBackoff();
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
        if (!started.getAsBoolean()) {
            // closed while the campaign was in flight: give it straight back
            release.release(rec.leaseId(), recordModRevision, value, false, new CompletableFuture<>());
            return;
        }
        leadership = l;
        heldRecord = value;
        meters.won.increment();
        timing.won(now());
        if (announcer.state() == LOST) {
            announcer.transition(CANDIDATE, "campaigning again", null);
        }
        if (keeper.view().validNow(rec.leaseId())) {
            l.validate();
            announcer.transition(LEADER, reason, l);
        } else {
            meters.suspectTransitions.increment();
            announcer.transition(SUSPECT, reason + ", but no renewal confirmed recently", l);
            // a SUSPECT that won needs the keeper's next confirmation; re-check after one renew interval too
            slot.retryAfter(config.renewInterval());
        }
    }

    /** Ends the held term voluntarily: invalidate first, then announce, then delete the record. */
    CompletableFuture<Void> resignNow(LossReason reason, String why, boolean withResignRequest, boolean closing) {
        return resignNow(reason, why, withResignRequest, closing, true);
    }

    CompletableFuture<Void> resignNow(
            LossReason reason, String why, boolean withResignRequest, boolean closing, boolean deleteRecord) {
        // callers resign only a held term, on the election's executor, which alone sets and clears it
        LeadershipImpl l = Objects.requireNonNull(leadership, "resignNow without a held term");
        l.invalidate(); // stop work first
        leadership = null;
        announcer.transition(closing ? CLOSED : FOLLOWER, why, l);
        l.end(reason);
        meters.lost(reason.name());
        if (!deleteRecord) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        byte[] value = Objects.requireNonNull(heldRecord, "a held term without its record"); // set with leadership
        release.release(l.leaseId(), l.recordModRevision, value, withResignRequest, done);
        return done;
    }

    private void releaseIfHeld(LossReason reason, String why) {
        if (leadership != null) {
            var unused = resignNow(reason, why, false, false); // the release retries until done; nobody waits
        }
    }

    /** The lease keeper doubts the lease: stop work before anyone hears about it. */
    void suspect(long leaseId, String reason) {
        LeadershipImpl l = leadership;
        if (l != null && l.leaseId() == leaseId && announcer.state() == LEADER) {
            l.invalidate();
            meters.suspectTransitions.increment();
            announcer.transition(SUSPECT, reason, l);
        }
    }

    /** The lease is gone: a term held on it is lost with it. */
    void leaseGone(long leaseId, String reason) {
        LeadershipImpl l = leadership;
        if (l != null && l.leaseId() == leaseId) {
            loseTerm(LossReason.LEASE_EXPIRED, reason);
            announcer.transition(CANDIDATE, "waiting for a new lease", null);
        }
    }

    private void loseTerm(LossReason reason, String why) {
        // a loss is decided only for a held term, on the election's executor, which alone sets and clears it
        LeadershipImpl l = Objects.requireNonNull(leadership, "loseTerm without a held term");
        l.invalidate();
        leadership = null;
        announcer.transition(LOST, why, l);
        l.end(reason);
        meters.lost(reason.name());
    }

    /** After resigning: do not campaign again for {@code resignHoldOff}. */
    void startHoldOff() {
        timing.startHoldOff(now());
    }

    /** The deadline clock (counts host suspend); the scale of event times and validity deadlines. */
    private long now() {
        return keeper.clock().nanoTime();
    }
}
