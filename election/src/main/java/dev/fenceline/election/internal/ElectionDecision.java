package dev.fenceline.election.internal;

import dev.fenceline.election.LeaderRecord;
import dev.fenceline.election.LossReason;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The election's decisions as pure functions of what etcd said and the local clock (no I/O, no clock reads,
 * no threads; table-tested in ElectionDecisionTest). The state machine reads, calls {@link #decide}, and
 * carries out the returned {@link Decision} through {@link ElectionStore}.
 */
final class ElectionDecision {
    private ElectionDecision() {}

    /** A term this candidate holds. */
    record Held(long leaseId, String nonce, long term, boolean suspect) {}

    /** The session lease as the lease keeper published it; valid only while HEALTHY and before the deadline. */
    record LeaseFacts(long leaseId, LeaseKeeper.Health health, long validUntilNanos) {
        boolean validAt(long nowNanos) {
            return health == LeaseKeeper.Health.HEALTHY && ValidityDeadline.isBefore(nowNanos, validUntilNanos);
        }

        boolean usable() {
            return health != LeaseKeeper.Health.GONE && health != LeaseKeeper.Health.CLOSED;
        }
    }

    /** A campaign whose transaction outcome is unknown: it may have committed, now or later. */
    record InDoubt(long leaseId, long termModRevision) {}

    /** Everything a decision depends on. {@code held} is null when no term is held. */
    /**
     * @param leaseLossHoldOffNanos configured {@code leaseLossHoldOff} (0 = off)
     * @param absentSinceNanos      deadline-clock reading when this candidate first saw the leader key absent for
     *                              the current term (taken after the response or event arrived); -1 if not absent
     */
    record Facts(
            KeysSnapshot keys,
            @Nullable Held held,
            LeaseFacts lease,
            Map<String, InDoubt> inDoubt,
            boolean holdingOff,
            long holdOffUntilNanos,
            long leaseLossHoldOffNanos,
            long absentSinceNanos,
            long nowNanos) {
        Facts(
                KeysSnapshot keys,
                @Nullable Held held,
                LeaseFacts lease,
                Map<String, InDoubt> inDoubt,
                boolean holdingOff,
                long holdOffUntilNanos,
                long nowNanos) {
            this(keys, held, lease, inDoubt, holdingOff, holdOffUntilNanos, 0, -1, nowNanos);
        }
    }

    sealed interface Action {}

    /** Keep the held term as it is. */
    record Stay() implements Action {}

    /** SUSPECT → LEADER: the read proved record and lease still ours and the keeper has a valid deadline. */
    record ResumeLeader() implements Action {}

    /** Give the held term up: invalidate, announce, delete the record guarded. */
    record Resign(LossReason reason, String why, boolean withResignRequest, boolean startHoldOff) implements Action {}

    /** A campaign in doubt committed: this candidate holds {@code record}'s term. */
    record AdoptCampaign(LeaderRecord record, StoredKey leader) implements Action {}

    /** A record on our lease that no campaign of ours accounts for: delete it, guarded on its exact bytes. */
    record DeleteLeftover(StoredKey leader) implements Action {}

    record Follow(String why) implements Action {}

    /** Resigned recently: do not campaign for {@code remainingNanos} more. */
    record HoldOff(long remainingNanos) implements Action {}

    /**
     * The leader record vanished without a resign marker (lease expired or was revoked): the old leader may still
     * count itself valid until its local deadline; do not campaign for {@code remainingNanos} more.
     */
    record WaitOutOldLeader(long remainingNanos) implements Action {}

    /** No usable lease: wait for the keeper to grant one. */
    record WaitForLease() implements Action {}

    record Campaign(long term) implements Action {}

    /** The term space is exhausted or the floor is absurd: an operator must act. */
    record CannotCampaign(String problem) implements Action {}

    /**
     * @param action           what to do
     * @param lost             non-null if a held term ended (the record is gone or someone else's)
     * @param lostWhy          why, for the event
     * @param keepInDoubtAt    campaigns in doubt compared a term mod revision; only those at this revision can
     *                         still commit ({@code -1}: keep all)
     * @param staleResignRequest a resign request for an older term, to delete (guarded), or null
     * @param holdOffOver      the hold-off after a resign has ended
     */
    record Decision(
            Action action,
            @Nullable LossReason lost,
            @Nullable String lostWhy,
            long keepInDoubtAt,
            @Nullable StoredKey staleResignRequest,
            boolean holdOffOver) {
        static Decision of(Action a) {
            return new Decision(a, null, null, -1, null, false);
        }
    }

    /** The decision after one linearizable read. Invariants in the comments next to each branch. */
    static Decision decide(Facts f) {
        KeysSnapshot s = f.keys();
        LeaderRecord rec = s.record;
        LossReason lost = null;
        String lostWhy = null;
        Held h = f.held();
        if (h != null) {
            boolean stillOurs =
                    rec != null && rec.leaseId() == h.leaseId() && rec.nonce().equals(h.nonce());
            if (stillOurs) {
                if (s.paused) {
                    return Decision.of(new Resign(LossReason.PAUSED, "kill switch present", false, false));
                }
                StoredKey request = s.resignRequest;
                if (request != null && KeysSnapshot.resignRequestTerm(request, h.term()) == h.term()) {
                    return Decision.of(new Resign(LossReason.RESIGN_REQUESTED, "resign requested", true, true));
                }
                // SUSPECT resumes only on this read AND a deadline still in the future on the (suspend-aware) clock
                Action a = h.suspect()
                                && f.lease().leaseId() == h.leaseId()
                                && f.lease().validAt(f.nowNanos())
                        ? new ResumeLeader()
                        : new Stay();
                return new Decision(a, null, null, -1, s.resignRequest, false);
            }
            lost = LossReason.RECORD_GONE;
            lostWhy = rec == null
                    ? (s.leader == null ? "leader record deleted" : "leader record unreadable")
                    : "leader record now held by " + rec.leaderId() + " term " + rec.term();
        }

        if (s.leader != null) {
            // ours iff lease id AND the nonce of a campaign in doubt match: nobody else can write our nonce
            if (rec != null
                    && rec.leaseId() == f.lease().leaseId()
                    && f.inDoubt().containsKey(rec.nonce())) {
                return new Decision(new AdoptCampaign(rec, s.leader), lost, lostWhy, -1, null, false);
            }
            if (rec != null && rec.leaseId() == f.lease().leaseId() && f.lease().health() != LeaseKeeper.Health.GONE) {
                return new Decision(new DeleteLeftover(s.leader), lost, lostWhy, -1, null, false);
            }
            return new Decision(
                    new Follow(
                            rec == null
                                    ? "leader record unreadable"
                                    : "leader is " + rec.leaderId() + " term " + rec.term()),
                    lost,
                    lostWhy,
                    s.termModRevision,
                    null,
                    false);
        }

        // No leader record. Campaigns in doubt that compared an older term revision can never commit.
        long keep = s.termModRevision;
        if (s.paused) {
            return new Decision(new Follow("paused: kill switch present"), lost, lostWhy, keep, null, false);
        }
        // Lease-loss hold-off: a record that went without a resign marker may have been revoked by a stalled etcd
        // leader while its holder still counts itself valid. That holder's deadline is at most
        // (last confirmed renewal send) + ttl - margin, and every confirmed renewal was sent before the revocation
        // committed, which is before we saw the key absent; so waiting holdOff >= ttl from our first sight of the
        // absence outlasts it (clock-rate differences within the margin).
        if (f.leaseLossHoldOffNanos() > 0 && s.leaderGoneInvoluntarily()) {
            long since = f.absentSinceNanos() < 0 ? f.nowNanos() : f.absentSinceNanos();
            long left = since + f.leaseLossHoldOffNanos() - f.nowNanos();
            if (left > 0) {
                return new Decision(new WaitOutOldLeader(left), lost, lostWhy, keep, null, false);
            }
        }
        boolean holdOffOver = false;
        if (f.holdingOff()) {
            long left = f.holdOffUntilNanos() - f.nowNanos();
            if (left > 0) {
                return new Decision(new HoldOff(left), lost, lostWhy, keep, null, false);
            }
            holdOffOver = true;
        }
        if (!f.lease().usable()) {
            return new Decision(new WaitForLease(), lost, lostWhy, keep, null, holdOffOver);
        }
        try {
            return new Decision(new Campaign(Terms.next(s.term, s.floor)), lost, lostWhy, keep, null, holdOffOver);
        } catch (IllegalArgumentException | ArithmeticException e) {
            // never wrap around or guess a term
            // Terms.next and addExact always give a message; valueOf only keeps the type non-null
            return new Decision(
                    new CannotCampaign(String.valueOf(e.getMessage())), lost, lostWhy, keep, null, holdOffOver);
        }
    }

    enum CampaignOutcome {
        /** committed: this candidate holds the term */
        WON,
        /** a compare failed: someone moved first; re-read */
        LOST_RACE,
        /** etcd answered and refused it (e.g. our lease is gone): it did not and will not commit */
        REJECTED,
        /** no definite answer: it may commit, now or later; resolve by reading (nonce) */
        IN_DOUBT
    }

    static CampaignOutcome outcome(Optional<Long> committedAt, @Nullable Throwable error) {
        if (error == null) {
            return committedAt.isPresent() ? CampaignOutcome.WON : CampaignOutcome.LOST_RACE;
        }
        return EtcdFailure.isDefinite(error) ? CampaignOutcome.REJECTED : CampaignOutcome.IN_DOUBT;
    }

    /**
     * Closing with campaigns in doubt: the leader key as read now; returns the record to delete (guarded on its
     * exact bytes) iff it is one of those campaigns, committed.
     */
    static Optional<StoredKey> recordToDeleteOnClose(Optional<StoredKey> leader, Map<String, InDoubt> inDoubt) {
        if (leader.isEmpty() || inDoubt.isEmpty()) {
            return Optional.empty();
        }
        StoredKey kv = leader.get();
        LeaderRecord rec;
        try {
            rec = LeaderRecordCodec.decode(kv.value());
        } catch (IllegalArgumentException unreadable) {
            return Optional.empty(); // ours are always readable
        }
        InDoubt d = inDoubt.get(rec.nonce());
        return d != null && d.leaseId() == kv.lease() && rec.leaseId() == kv.lease() ? leader : Optional.empty();
    }
}
