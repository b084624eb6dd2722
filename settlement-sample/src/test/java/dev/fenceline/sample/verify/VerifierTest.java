package dev.fenceline.sample.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.sample.settlement.IdempotencyKey;
import dev.fenceline.sample.verify.VerifyInput.AttemptOutcome;
import dev.fenceline.sample.verify.VerifyInput.Batch;
import dev.fenceline.sample.verify.VerifyInput.PaymentSummary;
import dev.fenceline.sample.verify.VerifyInput.Rejection;
import dev.fenceline.sample.verify.VerifyInput.TermAccepted;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** verify's rules on hand-made data: a clean history passes, each kind of corruption is named. */
class VerifierTest {
    private static final Instant T0 = Instant.parse("2026-11-30T17:00:00Z");

    private static Instant at(int s) {
        return T0.plusSeconds(s);
    }

    /** A batch of payments [from, from+n) committed cleanly. */
    private static Batch batch(long id, long term, long seq, int s, long from, int n) {
        long[] ids = new long[n];
        for (int i = 0; i < n; i++) {
            ids[i] = from + i;
        }
        String key = IdempotencyKey.of(ids);
        return new Batch(id, key, term, "w" + term, n, n * 100L, seq, at(s), n, n * 100L, key, 0);
    }

    private static List<TermAccepted> terms() {
        return List.of(
                new TermAccepted(1, "w1", at(0)), new TermAccepted(2, "w2", at(10)), new TermAccepted(3, "w3", at(20)));
    }

    private static VerifyInput clean(List<Batch> batches, List<Rejection> rejections, List<AttemptOutcome> history) {
        long settled = batches.stream().mapToLong(Batch::paymentCount).sum();
        return new VerifyInput(
                "settlement", 3, new PaymentSummary(settled, 0, settled, 0, 0), batches, terms(), rejections, history);
    }

    private static List<Batch> goodBatches() {
        return List.of(
                batch(1, 1, 1, 1, 1, 10),
                batch(2, 1, 2, 2, 11, 10),
                batch(3, 2, 3, 11, 21, 10),
                batch(4, 3, 4, 21, 31, 10));
    }

    @Test
    void aCleanHistoryPassesWithAOneLineSummary() {
        Verifier.Report r = Verifier.check(clean(
                goodBatches(),
                List.of(new Rejection(1, 1, 2, "w1", "k", "settlement.settlement_batch", at(12))),
                List.of(new AttemptOutcome("w1", 1, "k", "rejected"))));
        assertThat(r.violations()).isEmpty();
        assertThat(r.summary())
                .contains("all 40 payments settled exactly once")
                .contains("in 4 batches")
                .contains("1 rejected write(s) audited");
    }

    @Test
    void aStaleCommitAfterAHigherTermIsCaughtTwice() {
        List<Batch> b = new ArrayList<>(goodBatches());
        b.add(batch(5, 2, 5, 25, 41, 10)); // term 2 commits at t=25 after term 3 was accepted at t=20
        Verifier.Report r = Verifier.check(clean(b, List.of(), List.of()));
        assertThat(r.violations())
                .anyMatch(v -> v.startsWith("monotonic-terms: batch 5 (term 2"))
                .anyMatch(v -> v.startsWith("stale-commit: batch 5") && v.contains("mark in force was 3"));
    }

    @Test
    void aBatchAboveTheMarkOrWithAnUnacceptedTermMeansTheFenceWasBypassed() {
        List<Batch> b = new ArrayList<>(goodBatches());
        b.add(batch(5, 4, 5, 30, 41, 10));
        Verifier.Report r = Verifier.check(clean(b, List.of(), List.of()));
        assertThat(r.violations())
                .anyMatch(v -> v.contains("above the database mark 3"))
                .anyMatch(v -> v.contains("never appears in fencing.term_history"));
    }

    @Test
    void aPaymentSettledTwiceBreaksItsFirstBatch() {
        List<Batch> b = new ArrayList<>(goodBatches());
        Batch first = b.get(0);
        // payment 10 was re-settled by batch 2: batch 1 is referenced by only 9 payments
        b.set(
                0,
                new Batch(
                        first.id(),
                        first.idempotencyKey(),
                        first.term(),
                        first.leaderId(),
                        10,
                        1000,
                        1,
                        at(1),
                        9,
                        900,
                        IdempotencyKey.of(1, 2, 3, 4, 5, 6, 7, 8, 9),
                        0));
        Verifier.Report r = Verifier.check(clean(b, List.of(), List.of()));
        assertThat(r.violations())
                .anyMatch(v -> v.startsWith("at-most-once: batch 1") && v.contains("claims 10 payments"));
    }

    @Test
    void aBatchWhoseContentDoesNotMatchItsKeyIsNamed() {
        List<Batch> b = new ArrayList<>(goodBatches());
        Batch first = b.get(0);
        b.set(
                0,
                new Batch(
                        first.id(),
                        first.idempotencyKey(),
                        first.term(),
                        first.leaderId(),
                        10,
                        1000,
                        1,
                        at(1),
                        10,
                        1000,
                        IdempotencyKey.of(2, 3, 4, 5, 6, 7, 8, 9, 10, 99),
                        0));
        assertThat(Verifier.check(clean(b, List.of(), List.of())).violations())
                .anyMatch(v -> v.contains("does not match the payments"));
    }

    @Test
    void aLostPaymentIsNamedWhenNothingIsPending() {
        List<Batch> b = goodBatches();
        VerifyInput in =
                new VerifyInput("settlement", 3, new PaymentSummary(41, 0, 40, 0, 0), b, terms(), List.of(), List.of());
        assertThat(Verifier.check(in).violations())
                .anyMatch(v -> v.startsWith("exactly-once: nothing is PENDING but only 40 of 41"));
    }

    @Test
    void pendingPaymentsAreNotAViolationButTheSummarySaysSo() {
        List<Batch> b = goodBatches();
        VerifyInput in = new VerifyInput(
                "settlement", 3, new PaymentSummary(50, 10, 40, 0, 0), b, terms(), List.of(), List.of());
        Verifier.Report r = Verifier.check(in);
        assertThat(r.violations()).isEmpty();
        assertThat(r.summary()).contains("40 of 50 payments settled at most once (10 still PENDING)");
    }

    @Test
    void aRejectedAttemptWithoutAnAuditRowIsNamed() {
        Verifier.Report r = Verifier.check(
                clean(goodBatches(), List.of(), List.of(new AttemptOutcome("w1", 1, "sha256:abc", "rejected"))));
        assertThat(r.violations())
                .containsExactly(
                        "rejections-audited: worker w1 reported batch sha256:abc (term 1) rejected but fencing.rejected_write has no row for it");
    }

    @Test
    void anAuditRowThatIsNotARealRejectionIsNamed() {
        Verifier.Report r = Verifier.check(
                clean(goodBatches(), List.of(new Rejection(7, 3, 3, "w3", "k", "t", at(22))), List.of()));
        assertThat(r.violations()).anyMatch(v -> v.startsWith("rejections-audited: audit row 7"));
    }

    @Test
    void aCommitReportedByAWorkerButMissingInTheDatabaseIsNamed() {
        Verifier.Report r = Verifier.check(
                clean(goodBatches(), List.of(), List.of(new AttemptOutcome("w2", 2, "sha256:nope", "committed"))));
        assertThat(r.violations()).anyMatch(v -> v.startsWith("history: worker w2 reported batch sha256:nope"));
    }

    @Test
    void paymentsStampedWithAnotherTermAreNamed() {
        List<Batch> b = new ArrayList<>(goodBatches());
        Batch x = b.get(2);
        b.set(
                2,
                new Batch(
                        x.id(),
                        x.idempotencyKey(),
                        x.term(),
                        x.leaderId(),
                        x.paymentCount(),
                        x.totalCents(),
                        x.commitSeq(),
                        x.committedAt(),
                        x.referencingCount(),
                        x.referencingCents(),
                        x.contentKey(),
                        2));
        assertThat(Verifier.check(clean(b, List.of(), List.of())).violations())
                .containsExactly(
                        "at-most-once: 2 payment(s) of batch 3 carry a fencing_term other than the batch term 2");
    }
}
