package dev.fenceline.election.internal;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The deadline-clock readings that gate and time this candidate's campaigns: the hold-off after its own resign,
 * when it first saw the leader record absent (per term, for leaseLossHoldOff), and when a takeover started (for
 * the takeover metric). Reads no clock: callers pass one reading. Confined to the election's serial executor.
 */
final class CampaignTiming {
    // the election's logger: these lines are the election's waits
    private static final Logger log = LoggerFactory.getLogger(DefaultLeaderElection.class);

    private final String electionName;
    private final String candidateId;
    private final Duration resignHoldOff;
    private final ElectionMetrics.PerElection meters;

    private long holdOffUntilNanos;
    private boolean holdingOff;
    /** When this candidate first saw no leader on the way to its next win; -1 = a leader is there. */
    private long leaderAbsentSinceNanos = -1;
    /** Term whose record this candidate saw absent, and when it first did; -1 = present. */
    private long absentTerm = -1;

    private long absentSinceNanos = -1;
    /** The term whose vanished record this candidate last waited out (counted and logged once). */
    private long waitedOutTerm = -1;

    CampaignTiming(
            String electionName, String candidateId, Duration resignHoldOff, ElectionMetrics.PerElection meters) {
        this.electionName = electionName;
        this.candidateId = candidateId;
        this.resignHoldOff = resignHoldOff;
        this.meters = meters;
    }

    /** After resigning: do not campaign again for {@code resignHoldOff}. */
    void startHoldOff(long nowNanos) {
        holdingOff = true;
        holdOffUntilNanos = nowNanos + resignHoldOff.toNanos();
    }

    void holdOffOver() {
        holdingOff = false;
    }

    boolean holdingOff() {
        return holdingOff;
    }

    long holdOffUntilNanos() {
        return holdOffUntilNanos;
    }

    boolean holdingOffAt(long nowNanos) {
        return holdingOff && holdOffUntilNanos - nowNanos > 0;
    }

    /**
     * Records what one read (or event) showed at {@code nowNanos}, taken after it arrived: not before the record
     * was gone.
     *
     * @return when this candidate first saw the leader record of {@code term} absent; -1 while it is present
     */
    long absentSince(boolean leaderPresent, long term, long nowNanos) {
        if (leaderPresent) {
            absentTerm = -1;
            absentSinceNanos = -1;
        } else if (absentTerm != term || absentSinceNanos < 0) {
            absentTerm = term;
            absentSinceNanos = nowNanos;
        }
        return absentSinceNanos;
    }

    /** A leader record is there: no takeover is under way. */
    void leaderPresent() {
        leaderAbsentSinceNanos = -1;
    }

    /** Campaigning: a takeover starts now unless one already did. */
    void campaigning(long nowNanos) {
        if (leaderAbsentSinceNanos < 0) {
            leaderAbsentSinceNanos = nowNanos;
        }
    }

    /** The campaign was won: records how long the takeover took, if one was timed. */
    void won(long nowNanos) {
        if (leaderAbsentSinceNanos >= 0) {
            meters.takeover.record(nowNanos - leaderAbsentSinceNanos, TimeUnit.NANOSECONDS);
            leaderAbsentSinceNanos = -1;
        }
    }

    /** Not campaigning while the old leader of {@code term} may still act; counted and logged once per term. */
    void waitingOut(long term, long remainingNanos) {
        if (waitedOutTerm == term) {
            return;
        }
        waitedOutTerm = term;
        meters.leaseLossHoldOffs.increment();
        log.info(
                "leader record of term {} vanished without a resign marker (lease expired or revoked): not "
                        + "campaigning for {} ms so the old leader's local deadline passes first: election={} candidate={}",
                term,
                TimeUnit.NANOSECONDS.toMillis(remainingNanos),
                electionName,
                candidateId);
    }
}
