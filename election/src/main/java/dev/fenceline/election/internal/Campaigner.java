package dev.fenceline.election.internal;

import static dev.fenceline.election.LeadershipState.CANDIDATE;

import dev.fenceline.election.ElectionKeys;
import dev.fenceline.election.LeaderRecord;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends this candidate's campaign transactions and remembers those whose outcome is unknown until a read (or the
 * close) resolves them. Confined to the election's serial executor.
 */
final class Campaigner {
    // the election's logger: these lines are the election's campaigns
    private static final Logger log = LoggerFactory.getLogger(DefaultLeaderElection.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    /** What happens when a campaign is known to have won: the term is this candidate's. */
    interface WonTerm {
        void won(LeaderRecord record, byte[] value, long recordModRevision, String reason);
    }

    private final ElectionStore store;
    private final ElectionKeys keys;
    private final String candidateId;
    private final Map<String, String> metadata;
    private final SerialExecutor exec;
    private final EtcdOperationSlot slot;
    private final RecordRelease release;
    private final StateAnnouncer announcer;
    private final WonTerm wonTerm;

    /** Campaigns whose transaction outcome is unknown, by nonce. */
    private final Map<String, ElectionDecision.InDoubt> unresolved = new HashMap<>();

    Campaigner(
            ElectionStore store,
            ElectionKeys keys,
            String candidateId,
            Map<String, String> metadata,
            SerialExecutor exec,
            EtcdOperationSlot slot,
            RecordRelease release,
            StateAnnouncer announcer,
            WonTerm wonTerm) {
        this.store = store;
        this.keys = keys;
        this.candidateId = candidateId;
        this.metadata = metadata;
        this.exec = exec;
        this.slot = slot;
        this.release = release;
        this.announcer = announcer;
        this.wonTerm = wonTerm;
    }

    /** The campaigns in doubt, for the decision (a live view: decisions run on the same executor). */
    Map<String, ElectionDecision.InDoubt> inDoubt() {
        return unresolved;
    }

    boolean anyInDoubt() {
        return !unresolved.isEmpty();
    }

    /** A term was won, or the lease they were bound to is gone: none of them can matter any more. */
    void forgetInDoubt() {
        unresolved.clear();
    }

    /** The term key moved past {@code termModRevision}: a campaign that compared another revision never commits. */
    void keepInDoubtAt(long termModRevision) {
        unresolved.values().removeIf(p -> p.termModRevision() != termModRevision);
    }

    /** The CAS for {@code term}, compared against the term and floor revisions of {@code s}. */
    void campaign(KeysSnapshot s, long term, long leaseId) {
        byte[] nonceBytes = new byte[12];
        RANDOM.nextBytes(nonceBytes);
        String nonce = HexFormat.of().formatHex(nonceBytes);
        LeaderRecord rec = new LeaderRecord(candidateId, term, leaseId, nonce, metadata, Instant.now());
        announcer.transition(CANDIDATE, "leader key absent: campaigning for term " + term, null);
        long termModRev = s.termModRevision;
        byte[] value = LeaderRecordCodec.encode(rec);
        slot.run(() -> store.campaign(keys, leaseId, value, term, termModRev, s.floorModRevision), (committedAt, e) -> {
            switch (ElectionDecision.outcome(committedAt, e)) {
                case WON -> wonTerm.won(rec, value, committedAt.get(), "campaign won");
                case LOST_RACE -> slot.markDirty(); // compares failed: someone else moved first; re-read decides
                case REJECTED -> {
                    // etcd answered and rejected it (e.g. NOT_FOUND: our lease is gone): it did not commit and
                    // never will, so there is nothing to resolve.
                    log.warn(
                            "campaign rejected by etcd (not committed): election={} candidate={} term={} lease={} "
                                    + "error=\"{}\"",
                            keys.election(),
                            candidateId,
                            term,
                            leaseId,
                            EtcdFailure.describe(e));
                    slot.retryWithBackoff();
                }
                case IN_DOUBT -> {
                    // The transaction may still commit later. Remember the nonce; a later read that finds our
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
                    slot.retryWithBackoff();
                }
            }
        });
    }

    /**
     * Closing while a campaign's outcome is unknown: if it committed, the record sits on a lease the session
     * keeps renewing and nobody else could lead until the session closes. One read decides: a record with our
     * lease and a pending campaign's nonce is deleted, guarded on its mod revision and exact bytes. A campaign
     * that commits only after this read is removed by the session, which deletes any record on its lease that
     * appears for an election it has no handle for.
     */
    void resolveOnClose(CompletableFuture<Void> done) {
        // the callback handles a failed read itself and completes done on every path: its stage adds nothing
        var unused = store.readLeader(keys)
                .whenCompleteAsync(
                        (leader, e) -> {
                            if (e != null) {
                                log.warn(
                                        "closing: could not read whether a campaign with unknown outcome committed: "
                                                + "election={} error=\"{}\"; the session removes such a record when "
                                                + "it sees it",
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
                                    "closing: a campaign with unknown outcome had committed; deleting its record: "
                                            + "election={} candidate={} mod_revision={}",
                                    keys.election(),
                                    candidateId,
                                    kv.modRevision());
                            release.release(kv.lease(), kv.modRevision(), kv.value(), false, done);
                        },
                        exec);
    }
}
