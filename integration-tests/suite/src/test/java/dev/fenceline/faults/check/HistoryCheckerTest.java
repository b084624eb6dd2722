package dev.fenceline.faults.check;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.faults.history.BatchAttempt;
import dev.fenceline.faults.history.CommittedBatch;
import dev.fenceline.faults.history.FaultRecord;
import dev.fenceline.faults.history.History;
import dev.fenceline.faults.history.Outcome;
import dev.fenceline.faults.history.Payment;
import dev.fenceline.faults.history.RejectedWrite;
import dev.fenceline.faults.history.RogueAttempt;
import dev.fenceline.faults.history.StateChange;
import dev.fenceline.faults.history.TermMark;
import dev.fenceline.faults.history.ValidityWindow;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class HistoryCheckerTest {
    private static final long SEED = 4242L;
    private static final long S = 1_000_000_000L;
    private static final Instant T0 = Instant.parse("2026-11-30T17:00:00Z");
    private final HistoryChecker checker = new HistoryChecker(CheckerConfig.forTtl(Duration.ofSeconds(3)));

    /**
     * A clean story: w1 leads term 1 and settles payments 1-2 (batch 10), is frozen, w2 takes over with term 2 and
     * settles 3-4 (batch 11); w1 wakes up, its stale attempt is rejected and audited. One fault, healed, recovered.
     */
    private static History.Builder clean() {
        return History.builder(SEED)
                .mark(new TermMark("settlement", 1, "w1", T0))
                .mark(new TermMark("settlement", 2, "w2", T0.plusSeconds(10)))
                .attempt(new BatchAttempt("w1", 1, "k10", 1 * S, 2 * S, Outcome.COMMITTED, 2, null))
                .attempt(new BatchAttempt("w2", 2, "k11", 11 * S, 12 * S, Outcome.COMMITTED, 2, null))
                .attempt(new BatchAttempt("w1", 1, "k11", 8 * S, 13 * S, Outcome.REJECTED, 2, "stale term"))
                .committed(new CommittedBatch(10, "k10", 1, "w1", 2, 300, T0.plusSeconds(2)))
                .committed(new CommittedBatch(11, "k11", 2, "w2", 2, 700, T0.plusSeconds(12)))
                .rejected(new RejectedWrite(1, "settlement", 1, 2, "w1", "settlement_batch", "k11", T0.plusSeconds(13)))
                .payment(new Payment(1, "SETTLED", 10L, 100))
                .payment(new Payment(2, "SETTLED", 10L, 200))
                .payment(new Payment(3, "SETTLED", 11L, 300))
                .payment(new Payment(4, "SETTLED", 11L, 400))
                .inserted(java.util.List.of(1L, 2L, 3L, 4L))
                .state(new StateChange("w1", 0, 0, "LEADER", 1))
                .state(new StateChange("w1", 5 * S, 0, "SUSPECT", 1))
                .state(new StateChange("w2", 9 * S, 0, "LEADER", 2))
                .validity(new ValidityWindow("w1", 1, 0, 3 * S))
                .validity(new ValidityWindow("w1", 1, 2 * S, 5 * S))
                .validity(new ValidityWindow("w2", 2, 9 * S, 14 * S))
                .fault(new FaultRecord(1, "freezeLeader", "w1", "w1", 5 * S, 8 * S, 1, ""));
    }

    @Test
    void cleanHistoryPasses() {
        CheckResult r = checker.check(clean().build());
        assertThat(r.ok()).as(r.explain()).isTrue();
        assertThat(r.leaderOverlapNs()).isZero();
        assertThat(r.validityAvailable()).isTrue();
        assertThat(r.faultOutcomes()).singleElement().satisfies(o -> {
            assertThat(o.recoveryNs()).isEqualTo(4 * S); // heal at 8 s, first commit ends at 12 s
            assertThat(o.failoverNs()).isEqualTo(7 * S); // inject at 5 s, term 2 commit ends at 12 s
            assertThat(o.committed()).isEqualTo(1);
            assertThat(o.rejected()).isEqualTo(1);
        });
    }

    @Test
    void staleCommitAfterANewerMarkIsCaught() {
        // w1 (term 1) commits batch 12 at t0+20s, after the mark moved to 2 at t0+10s.
        History h = clean().committed(new CommittedBatch(12, "k12", 1, "w1", 1, 500, T0.plusSeconds(20)))
                .payment(new Payment(5, "SETTLED", 12L, 500))
                .inserted(5L)
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.B_NO_STALE_COMMIT))
                .singleElement()
                .asString()
                .contains("batch{id=12")
                .contains("term 1")
                .contains("mark was already 2");
        assertThat(r.violations(Check.A_TERMS_NEVER_GO_BACKWARDS))
                .singleElement()
                .asString()
                .contains("term went back from 2 to 1");
        assertThat(r.explain()).contains("seed " + SEED);
    }

    @Test
    void commitStampedWithinTheAmbiguityWindowOfANewMarkIsNotAViolation() {
        HistoryChecker lenient = new HistoryChecker(
                CheckerConfig.forTtl(Duration.ofSeconds(3)).withMarkTimeAmbiguity(Duration.ofSeconds(5)));
        History h = History.builder(SEED)
                .mark(new TermMark("settlement", 1, "w1", T0))
                .mark(new TermMark("settlement", 2, "w2", T0.plusSeconds(10)))
                .committed(new CommittedBatch(1, "k1", 1, "w1", 0, 0, T0.plusSeconds(12)))
                .build();
        assertThat(lenient.check(h).violations(Check.B_NO_STALE_COMMIT)).isEmpty();
        assertThat(checker.check(h).violations(Check.B_NO_STALE_COMMIT)).hasSize(1);
    }

    @Test
    void batchWithATermTheFenceNeverAcceptedIsCaught() {
        History h = clean().committed(new CommittedBatch(12, "k12", 7, "w3", 1, 500, T0.plusSeconds(20)))
                .payment(new Payment(5, "SETTLED", 12L, 500))
                .inserted(5L)
                .build();
        assertThat(checker.check(h).violations(Check.B_NO_STALE_COMMIT))
                .singleElement()
                .asString()
                .contains("term 7 which the fence never accepted");
    }

    @Test
    void attemptReportedRejectedThatActuallyCommittedIsCaught() {
        History h = clean().attempt(new BatchAttempt("w2", 2, "k11", 11 * S, 12 * S, Outcome.REJECTED, 2, "?"))
                .rejected(new RejectedWrite(2, "settlement", 2, 2, "w2", "settlement_batch", "k11", T0))
                .build();
        assertThat(checker.check(h).violations(Check.B_NO_STALE_COMMIT))
                .singleElement()
                .asString()
                .contains("reported rejected, but the database committed it");
    }

    @Test
    void lostPaymentIsCaught() {
        History h = clean().payment(new Payment(5, "PENDING", null, 500))
                .inserted(5L)
                .inserted(6L) // inserted, but gone from the table
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.D_EXACTLY_ONCE))
                .extracting(Violation::explanation)
                .anySatisfy(s -> assertThat(s).contains("payment 5 is still PENDING"))
                .anySatisfy(s -> assertThat(s).contains("payment 6 was inserted but is missing"));
    }

    @Test
    void paymentSettledByANonexistentBatchIsCaught() {
        History h = clean().payment(new Payment(5, "SETTLED", 99L, 500))
                .inserted(5L)
                .build();
        assertThat(checker.check(h).violations(Check.D_EXACTLY_ONCE))
                .extracting(Violation::explanation)
                .anySatisfy(s -> assertThat(s).contains("payment 5 is SETTLED by batch 99 which does not exist"));
    }

    @Test
    void doubleSettlementIsCaught() {
        // Batch 12 (term 2) settled payments 3 and 4 again: they now point to 12, batch 11 still claims them.
        History.Builder b = History.builder(SEED)
                .mark(new TermMark("settlement", 1, "w1", T0))
                .mark(new TermMark("settlement", 2, "w2", T0.plusSeconds(10)))
                .committed(new CommittedBatch(10, "k10", 1, "w1", 2, 300, T0.plusSeconds(2)))
                .committed(new CommittedBatch(11, "k11", 2, "w2", 2, 700, T0.plusSeconds(12)))
                .committed(new CommittedBatch(12, "k12", 2, "w2", 2, 700, T0.plusSeconds(13)))
                .payment(new Payment(1, "SETTLED", 10L, 100))
                .payment(new Payment(2, "SETTLED", 10L, 200))
                .payment(new Payment(3, "SETTLED", 12L, 300))
                .payment(new Payment(4, "SETTLED", 12L, 400))
                .inserted(java.util.List.of(1L, 2L, 3L, 4L));
        CheckResult r = checker.check(b.build());
        assertThat(r.violations(Check.D_EXACTLY_ONCE))
                .extracting(Violation::explanation)
                .anySatisfy(s -> assertThat(s).contains("batch{id=11").contains("settled twice"))
                .anySatisfy(s -> assertThat(s).contains("batches claim 6 settled payment(s) but 4"));
    }

    @Test
    void commitReportedByAWorkerButAbsentFromTheDatabaseIsCaught() {
        History h = clean().attempt(new BatchAttempt("w2", 2, "k-ghost", 14 * S, 15 * S, Outcome.COMMITTED, 3, null))
                .build();
        assertThat(checker.check(h).violations(Check.D_EXACTLY_ONCE))
                .singleElement()
                .asString()
                .contains("k-ghost")
                .contains("lost commit");
    }

    @Test
    void missingAuditRowIsCaught() {
        History h = clean().attempt(new BatchAttempt("w3", 1, "k13", 20 * S, 21 * S, Outcome.REJECTED, 2, "stale term"))
                .build();
        assertThat(checker.check(h).violations(Check.C_REJECTIONS_AUDITED))
                .singleElement()
                .asString()
                .contains("worker=w3")
                .contains("no row for offered_term 1 and leader w3");
    }

    @Test
    void oneAuditRowDoesNotCoverTwoRejections() {
        History h = clean().attempt(new BatchAttempt("w1", 1, "k99", 14 * S, 15 * S, Outcome.REJECTED, 2, "stale term"))
                .build();
        assertThat(checker.check(h).violations(Check.C_REJECTIONS_AUDITED)).hasSize(1);
    }

    @Test
    void auditRowMatchedByLeaderAndTermWhenTheKeyIsNotRecorded() {
        History h = History.builder(SEED)
                .attempt(new BatchAttempt("w1", 3, "kx", 1, 2, Outcome.REJECTED, 1, null))
                .rejected(new RejectedWrite(1, "settlement", 3, 4, "w1@host", "payment", null, T0))
                .build();
        assertThat(checker.check(h).violations(Check.C_REJECTIONS_AUDITED)).isEmpty();
    }

    @Test
    void overlappingValidLeadershipIsCaughtAndMeasured() {
        History h =
                clean().validity(new ValidityWindow("w3", 3, 13 * S, 20 * S)).build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.F_SINGLE_VALID_LEADER))
                .singleElement()
                .asString()
                .contains("w2 (term 2) and w3 (term 3) were both validly LEADER for 1000.000 ms");
        assertThat(r.leaderOverlapNs()).isEqualTo(1 * S);
    }

    @Test
    void aClaimAboutThePastIsNotTrustedOnlyWhatTheWorkerSaidFromThenOn() {
        // w3 says at 20 s "valid since 0 s until 21 s" (a term-keyed "since" after a term was reused): it only counts
        // from 20 s, so it does not overlap w2 (until 14 s).
        History h =
                clean().validity(new ValidityWindow("w3", 1, 0, 21 * S, 20 * S)).build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.F_SINGLE_VALID_LEADER)).isEmpty();
    }

    @Test
    void aClaimEndsWhenTheWorkersOwnLogLeavesLeaderAndClaimsMadeWhileSuspectDoNotCount() {
        // w3 leads term 3 from 14 s, resigns at 15 s although its last claim said "until 20 s"; w4 leads from 16 s.
        // w5 re-states an old deadline while SUSPECT.
        History h = clean().state(new StateChange("w3", 14 * S, 0, "LEADER", 3, 77))
                .validity(new ValidityWindow("w3", 3, 14 * S, 20 * S, 14 * S))
                .state(new StateChange("w3", 15 * S, 0, "FOLLOWER", 0, 77))
                .state(new StateChange("w4", 16 * S, 0, "LEADER", 4, 78))
                .validity(new ValidityWindow("w4", 4, 16 * S, 19 * S, 16 * S))
                .state(new StateChange("w5", 17 * S, 0, "SUSPECT", 2, 79))
                .validity(new ValidityWindow("w5", 2, 10 * S, 18 * S, 17 * S))
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.F_SINGLE_VALID_LEADER)).as(r.explain()).isEmpty();
    }

    @Test
    void overlapAcrossACoordinatorRebuildIsReportedButIsNotAViolation() {
        // w2's window (9..14 s) was granted by the old coordinator; the rebuild at 12 s; w3 leads the new one at 12.5
        // s.
        History h = clean().fault(new FaultRecord(2, "coordinatorRebuilt", "etcd", null, 12 * S, 12 * S, 2, ""))
                .validity(new ValidityWindow("w3", 1, 12_500_000_000L, 20 * S, 12_500_000_000L))
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.F_SINGLE_VALID_LEADER)).isEmpty();
        assertThat(r.crossRebuildOverlapNs()).isEqualTo(1_500_000_000L);
        assertThat(r.leaderOverlapNs()).isZero();
    }

    @Test
    void missingValidityRecordsAreReportedUnavailableOrFailWhenRequired() {
        History h = History.builder(SEED)
                .state(new StateChange("w1", 0, 0, "LEADER", 1))
                .build();
        assertThat(checker.check(h).validityAvailable()).isFalse();
        assertThat(checker.check(h).ok()).isTrue();
        HistoryChecker strict =
                new HistoryChecker(CheckerConfig.forTtl(Duration.ofSeconds(3)).withRequireValidityWindows(true));
        assertThat(strict.check(h).violations(Check.F_SINGLE_VALID_LEADER)).hasSize(1);
    }

    @Test
    void noCommitAfterAHealIsALivenessViolation() {
        History h = clean().fault(new FaultRecord(2, "quorumLoss", "m1,m2", null, 20 * S, 30 * S, 2, ""))
                .build();
        assertThat(checker.check(h).violations(Check.E_LIVENESS))
                .singleElement()
                .asString()
                .contains("fault #2 quorumLoss")
                .contains("no leader committed");
    }

    @Test
    void slowRecoveryBeyondTheBoundIsALivenessViolation() {
        HistoryChecker tight = new HistoryChecker(new CheckerConfig(Duration.ofSeconds(1), Duration.ZERO, false));
        CheckResult r = tight.check(clean().build());
        assertThat(r.violations(Check.E_LIVENESS))
                .singleElement()
                .asString()
                .contains("after 4000 ms, above the bound 1000 ms");
    }

    @Test
    void configRejectsNonsense() {
        assertThatThrownBy(() -> new CheckerConfig(Duration.ZERO, Duration.ZERO, false))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("livenessBound");
        assertThatThrownBy(() -> new CheckerConfig(Duration.ofSeconds(1), Duration.ofSeconds(-1), false))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("markTimeAmbiguity");
    }

    /**
     * w2's batch k12 was acknowledged at 14 s, then the primary failed over at 15 s: with an asynchronous standby the
     * promoted server may lack it. That is a durability loss, counted apart and not failing the run; the same loss
     * with a synchronous standby, or a commit acknowledged after the failover, stays a (d) violation.
     */
    private static History.Builder lostAroundAFailover(boolean asynchronous, long acknowledgedAtNs) {
        return clean().attempt(new BatchAttempt(
                        "w2", 2, "k12", acknowledgedAtNs - S / 2, acknowledgedAtNs, Outcome.COMMITTED, 1, null))
                .inserted(5L)
                // the promoted primary takes a batch after the heal (liveness)
                .attempt(new BatchAttempt("w2", 2, "k13", 18 * S, 18 * S + S / 2, Outcome.COMMITTED, 0, null))
                .committed(new CommittedBatch(13, "k13", 2, "w2", 0, 0, T0.plusSeconds(18)))
                .fault(new FaultRecord(
                        2, "postgresFailover", "primary", null, 15 * S, 16 * S, 2, "asynchronous standby"))
                .asynchronousStandby(asynchronous);
    }

    @Test
    void commitsAcknowledgedBeforeAnAsynchronousFailoverAndMissingAreLossesNotViolations() {
        CheckResult r = checker.check(lostAroundAFailover(true, 14 * S).build());
        assertThat(r.ok()).as(r.explain()).isTrue();
        assertThat(r.safetyViolations()).isEmpty();
        assertThat(r.lostByAsyncFailover())
                .hasSize(2)
                .allSatisfy(v -> assertThat(v.explanation()).contains("fault #2 postgresFailover"));
        assertThat(r.lostByAsyncFailover())
                .anySatisfy(v ->
                        assertThat(v.explanation()).contains("batch_key=k12").contains("(asynchronous standby)"));
        assertThat(r.lostByAsyncFailover())
                .anySatisfy(v -> assertThat(v.explanation())
                        .startsWith("1 inserted payment(s) missing")
                        .contains("ids 5)"));
        assertThat(r.asyncLoss()).isEqualTo(new AsyncLoss(1, 1, 0));
        assertThat(r.explain())
                .contains("lost by a failover to an asynchronous standby")
                .contains("1 inserted payment(s), 1 batch(es) reported committed, 0 audit row(s)");
    }

    @Test
    void theSameLossWithASynchronousStandbyIsAViolation() {
        CheckResult r = checker.check(lostAroundAFailover(false, 14 * S).build());
        assertThat(r.ok()).isFalse();
        assertThat(r.lostByAsyncFailover()).isEmpty();
        assertThat(r.violations(Check.D_EXACTLY_ONCE)).hasSize(2);
        assertThat(r.asyncLoss()).isEqualTo(AsyncLoss.NONE);
    }

    @Test
    void idRangesAreCompact() {
        assertThat(HistoryChecker.ranges(java.util.List.of(9L, 3L, 4L, 5L, 11L, 12L)))
                .isEqualTo("3-5, 9, 11-12");
    }

    @Test
    void aCommitAcknowledgedAfterTheAsynchronousFailoverAndMissingIsAViolation() {
        CheckResult r = checker.check(lostAroundAFailover(true, 17 * S).build());
        assertThat(r.ok()).isFalse();
        assertThat(r.violations(Check.D_EXACTLY_ONCE))
                .singleElement()
                .asString()
                .contains("batch_key=k12")
                .contains("lost commit");
    }

    // ---- election findings: a hung etcd member, a slow etcd disk ---------------------------------------------

    /** clean() plus a hung member injected at 5.5 s (after w1 led term 1); w2 becomes LEADER of term 2 at 9 s. */
    private static History hungMemberAt5500ms() {
        return clean().fault(new FaultRecord(2, "hungEtcdMember", "w1 + etcd m2", "w1", 5_500_000_000L, 8 * S, 1, ""))
                .build();
    }

    @Test
    void aSuccessorWithinTtlPlusOneSecondOfAHungEtcdMemberIsNoFinding() {
        CheckResult r = checker.check(hungMemberAt5500ms()); // TTL 3 s: bound 4 s, successor after 3.5 s
        assertThat(r.electionFindings()).as(r.explain()).isEmpty();
        assertThat(r.faultOutcomes())
                .filteredOn(o -> o.fault().index() == 2)
                .singleElement()
                .satisfies(o -> assertThat(o.successorNs()).isEqualTo(3_500_000_000L));
    }

    @Test
    void noSuccessorWithinTtlPlusOneSecondOfAHungEtcdMemberIsAFindingNotAViolation() {
        HistoryChecker ttl2 = new HistoryChecker(CheckerConfig.forTtl(Duration.ofSeconds(2))); // bound 3 s
        CheckResult r = ttl2.check(hungMemberAt5500ms());
        assertThat(r.violations(Check.SUCCESSION_SLOWER_THAN_BOUND))
                .singleElement()
                .asString()
                .contains("fault #2 hungEtcdMember")
                .contains("after 3500 ms")
                .contains("TTL + 1 s = 3000 ms");
        assertThat(r.ok()).as(r.explain()).isTrue();
        assertThat(r.explain()).contains("election findings");
    }

    @Test
    void theFaultedWorkerWinningAgainIsNoSuccessor() {
        // The hung member's fault hit w2 (its record says so; its description does not name it); the only new leader
        // afterwards is w2 itself (term 2 at 9 s).
        History h = clean().fault(new FaultRecord(
                        2, "hungEtcdMember", "the leader + etcd m1", "w2", 5_500_000_000L, 8 * S, 1, ""))
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.faultOutcomes())
                .filteredOn(o -> o.fault().index() == 2)
                .singleElement()
                .satisfies(o -> assertThat(o.successorNs()).isEqualTo(-1));
        assertThat(r.violations(Check.SUCCESSION_SLOWER_THAN_BOUND))
                .singleElement()
                .asString()
                .contains("no successor became leader");
    }

    @Test
    void validityOverlapAroundASlowEtcdDiskIsAnElectionFindingNotAViolation() {
        // w2 (9..14 s) and w3 (13..20 s) overlap for 1 s; a slow disk from 10 s, healed at 11 s (aftermath 10 s).
        History h = clean().validity(new ValidityWindow("w3", 3, 13 * S, 20 * S))
                .fault(new FaultRecord(2, "slowEtcdDisk", "m1", null, 10 * S, 11 * S, 2, ""))
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.F_SINGLE_VALID_LEADER)).isEmpty();
        assertThat(r.violations(Check.ELECTION_OVERLAP_ETCD_STALL))
                .singleElement()
                .asString()
                .contains("w2 (term 2) and w3 (term 3)")
                .contains("fault #2 slowEtcdDisk");
        assertThat(r.etcdStallOverlapNs()).isEqualTo(1 * S);
        assertThat(r.leaderOverlapNs()).isZero();
        assertThat(r.ok()).as(r.explain()).isTrue();
    }

    @Test
    void validityOverlapAfterAHungEtcdMemberIsAnElectionFindingNotAViolation() {
        // A Raft leader resumed from SIGSTOP may confirm a renewal before it learns it was deposed.
        History h = clean().validity(new ValidityWindow("w3", 3, 13 * S, 20 * S))
                .fault(new FaultRecord(2, "hungEtcdMember", "w2 + etcd m1", "w2", 10 * S, 11 * S, 2, ""))
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.F_SINGLE_VALID_LEADER)).isEmpty();
        assertThat(r.violations(Check.ELECTION_OVERLAP_ETCD_STALL))
                .singleElement()
                .asString()
                .contains("fault #2 hungEtcdMember");
        assertThat(r.ok()).as(r.explain()).isTrue();
    }

    @Test
    void aStaleCommitAroundASlowEtcdDiskIsStillAViolation() {
        History h = clean().validity(new ValidityWindow("w3", 3, 13 * S, 20 * S))
                .fault(new FaultRecord(2, "slowEtcdDisk", "m1", null, 10 * S, 11 * S, 2, ""))
                .committed(new CommittedBatch(12, "k12", 1, "w1", 1, 500, T0.plusSeconds(20)))
                .payment(new Payment(5, "SETTLED", 12L, 500))
                .inserted(5L)
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.B_NO_STALE_COMMIT)).isNotEmpty();
        assertThat(r.ok()).isFalse();
    }

    // ---- rogue writes: refused, audited exactly once, no connection exhaustion --------------------------------

    private static RogueAttempt rogue(String id, Outcome outcome, String sqlState, boolean flood) {
        return new RogueAttempt(
                id,
                "STALE_TERM",
                "settlement.settlement_batch",
                "1",
                15 * S,
                15 * S + 1000,
                outcome,
                sqlState,
                null,
                flood,
                2);
    }

    private static RejectedWrite auditOf(long rowId, String rogueId) {
        return new RejectedWrite(
                rowId, "settlement", 1, 2, rogueId, "settlement.settlement_batch", null, T0.plusSeconds(15));
    }

    @Test
    void rogueWritesRefusedAndAuditedOnceEachPass() {
        History h = clean().rogue(rogue("rogue-2-1", Outcome.REJECTED, "FL001", false))
                .rogue(rogue("rogue-2-2", Outcome.REJECTED, "FL002", true))
                .rogue(rogue("rogue-2-3", Outcome.FAILED, "08001", false))
                .rejected(auditOf(10, "rogue-2-1"))
                .rejected(auditOf(11, "rogue-2-2"))
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.ok()).as(r.explain()).isTrue();
        assertThat(r.rogue()).isEqualTo(new RogueSummary(3, 2, 2, 0, 1));
    }

    @Test
    void aRogueWriteTheDatabaseCommittedIsAViolation() {
        History h = clean().rogue(rogue("rogue-2-1", Outcome.COMMITTED, null, false))
                .rogueRowCommitted("faults.rogue_ledger_p1 row of rogue-2-1")
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.G_ROGUE_REFUSED))
                .hasSize(2)
                .anySatisfy(
                        v -> assertThat(v.explanation()).contains("rogue-2-1").contains("was told it committed"))
                .anySatisfy(
                        v -> assertThat(v.explanation()).contains("a rogue write committed: faults.rogue_ledger_p1"));
        assertThat(r.rogue().committed()).isEqualTo(2);
        assertThat(r.ok()).isFalse();
    }

    @Test
    void aRefusedRogueWriteAuditedNeverOrTwiceAndAnAuditRowOfNoRogueWriteAreViolations() {
        History h = clean().rogue(rogue("rogue-2-1", Outcome.REJECTED, "FL001", false))
                .rogue(rogue("rogue-2-2", Outcome.REJECTED, "FL001", false))
                .rejected(auditOf(10, "rogue-2-2"))
                .rejected(auditOf(11, "rogue-2-2"))
                .rejected(auditOf(12, "rogue-9-9"))
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.H_ROGUE_AUDITED_ONCE))
                .hasSize(3)
                .anySatisfy(
                        v -> assertThat(v.explanation()).contains("rogue-2-1").contains("has no row"))
                .anySatisfy(
                        v -> assertThat(v.explanation()).contains("rogue-2-2").contains("audited 2 times"))
                .anySatisfy(
                        v -> assertThat(v.explanation()).contains("rogue-9-9").contains("never tried"));
        assertThat(r.rogue().audited()).isZero();
        // The workers' own rejection keeps its row: rogue rows are not taken for it, nor it for them.
        assertThat(r.violations(Check.C_REJECTIONS_AUDITED)).isEmpty();
    }

    @Test
    void aFloodWriteThatFoundNoConnectionIsAViolation() {
        History h = clean().rogue(rogue("rogue-2-f1", Outcome.FAILED, "53300", true))
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.I_NO_CONNECTION_EXHAUSTION))
                .singleElement()
                .asString()
                .contains("rogue-2-f1")
                .contains("too many clients");
        assertThat(r.ok()).isFalse();
    }

    // ---- supervision: a worker that exits on its own -------------------------------------------------------------

    @Test
    void aWorkerThatExitedOnItsOwnIsAViolationNamingItsExitCodeTimeAndLastLogLines() {
        History h = clean().workerExit(new dev.fenceline.faults.history.WorkerExit(
                        "w2", 1, 20 * S, T0.plusSeconds(20), "worker: PostgreSQL still unreachable after 301 attempts"))
                .build();
        CheckResult r = checker.check(h);
        assertThat(r.violations(Check.WORKER_EXITED))
                .singleElement()
                .asString()
                .contains("worker w2 exited with code 1 at 2026-11-30T17:00:20Z")
                .contains("last log lines:")
                .contains("PostgreSQL still unreachable after 301 attempts");
        assertThat(r.ok()).isFalse();
        assertThat(checker.check(clean().build()).violations(Check.WORKER_EXITED))
                .isEmpty();
    }
}
