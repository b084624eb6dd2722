package dev.fenceline.sample.verify;

import dev.fenceline.sample.verify.VerifyInput.AttemptOutcome;
import dev.fenceline.sample.verify.VerifyInput.Batch;
import dev.fenceline.sample.verify.VerifyInput.Rejection;
import dev.fenceline.sample.verify.VerifyInput.TermAccepted;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The rules of {@code fenceline verify}, on plain data (so they are unit-tested on hand-made input):
 * <ol>
 * <li><b>at-most-once</b>: every batch is referenced by exactly the payments it claims (count, cents and the
 *     idempotency key recomputed from their ids); a payment re-settled by another batch breaks its first
 *     batch. Every SETTLED payment references a batch and carries that batch's term.</li>
 * <li><b>exactly-once</b>: when nothing is PENDING, every payment is SETTLED (and rule 1 holds).</li>
 * <li><b>monotonic terms</b>: batch terms never go backwards in commit order ({@code commit_seq}).</li>
 * <li><b>no stale commit</b>: no batch term is below the mark in force when it committed (the highest term
 *     accepted in {@code fencing.term_history} at or before {@code committed_at}) or above the current mark.</li>
 * <li><b>rejections audited</b>: every audit row is a real rejection (offered &lt; highest accepted); with
 *     history files, every attempt a worker reported {@code rejected} has an audit row for its batch key
 *     and did not commit, and every attempt reported {@code committed} did commit.</li>
 * </ol>
 */
public final class Verifier {
    private Verifier() {}

    public record Report(List<String> violations, String summary) {
        public boolean ok() {
            return violations.isEmpty();
        }
    }

    public static Report check(VerifyInput in) {
        List<String> v = new ArrayList<>();
        var p = in.payments();

        // 1. at-most-once
        for (Batch b : in.batchesInCommitOrder()) {
            if (b.referencingCount() != b.paymentCount() || b.referencingCents() != b.totalCents()) {
                v.add("at-most-once: batch " + b.id() + " (term " + b.term() + ", " + b.idempotencyKey() + ") claims "
                        + b.paymentCount() + " payments / " + b.totalCents() + " cents but " + b.referencingCount()
                        + " payments / " + b.referencingCents()
                        + " cents reference it (a payment was settled again by another batch, or lost)");
            } else if (b.contentKey() != null && !b.contentKey().equals(b.idempotencyKey())) {
                v.add("at-most-once: batch " + b.id() + " (term " + b.term() + ") idempotency key " + b.idempotencyKey()
                        + " does not match the payments that reference it (" + b.contentKey() + ")");
            }
            if (b.termMismatches() > 0) {
                v.add("at-most-once: " + b.termMismatches() + " payment(s) of batch " + b.id()
                        + " carry a fencing_term other than the batch term " + b.term());
            }
        }
        if (p.settledWithoutBatch() > 0) {
            v.add("at-most-once: " + p.settledWithoutBatch() + " SETTLED payment(s) reference no batch");
        }
        if (p.pendingWithBatch() > 0) {
            v.add("at-most-once: " + p.pendingWithBatch() + " PENDING payment(s) reference a batch");
        }

        // 2. exactly-once (only meaningful when drained)
        boolean drained = p.pending() == 0;
        if (drained && p.settled() != p.total()) {
            v.add("exactly-once: nothing is PENDING but only " + p.settled() + " of " + p.total()
                    + " payments are SETTLED");
        }
        long claimed = in.batchesInCommitOrder().stream()
                .mapToLong(Batch::paymentCount)
                .sum();
        if (claimed != p.settled()) {
            v.add("exactly-once: batches claim " + claimed + " payments but " + p.settled() + " are SETTLED");
        }

        // 3. monotonic terms in commit order
        Batch prev = null;
        for (Batch b : in.batchesInCommitOrder()) {
            if (prev != null && b.term() < prev.term()) {
                v.add("monotonic-terms: batch " + b.id() + " (term " + b.term() + ", commit_seq " + b.commitSeq()
                        + ") committed after batch " + prev.id() + " (term " + prev.term() + ", commit_seq "
                        + prev.commitSeq() + ")");
            }
            prev = b;
        }

        // 4. no stale commit
        List<TermAccepted> hist = new ArrayList<>(in.termHistory());
        hist.sort((a, b) -> a.acceptedAt().compareTo(b.acceptedAt()));
        Set<Long> acceptedTerms = new HashSet<>();
        hist.forEach(h -> acceptedTerms.add(h.term()));
        for (Batch b : in.batchesInCommitOrder()) {
            long inForce = 0;
            for (TermAccepted h : hist) {
                if (h.acceptedAt().isAfter(b.committedAt())) {
                    break;
                }
                inForce = Math.max(inForce, h.term());
            }
            if (b.term() < inForce) {
                v.add("stale-commit: batch " + b.id() + " committed at " + b.committedAt() + " with term " + b.term()
                        + " while the mark in force was " + inForce);
            }
            if (b.term() > in.highestAccepted()) {
                v.add("stale-commit: batch " + b.id() + " has term " + b.term() + " above the database mark "
                        + in.highestAccepted() + " (the fence was bypassed)");
            }
            if (!hist.isEmpty() && !acceptedTerms.contains(b.term())) {
                v.add("stale-commit: batch " + b.id() + " has term " + b.term()
                        + " that never appears in fencing.term_history");
            }
        }

        // 5. rejections audited
        Map<String, Rejection> rejectionByKey = new HashMap<>();
        for (Rejection r : in.rejections()) {
            if (r.offeredTerm() >= r.highestAccepted() && r.offeredTerm() > 0) {
                v.add("rejections-audited: audit row " + r.id() + " records offered term " + r.offeredTerm()
                        + " which is not below the highest accepted " + r.highestAccepted());
            }
            if (r.businessKey() != null) {
                rejectionByKey.putIfAbsent(r.businessKey(), r);
            }
        }
        Set<String> committedKeys = new HashSet<>();
        in.batchesInCommitOrder().forEach(b -> committedKeys.add(b.idempotencyKey()));
        Map<String, Long> committedTerm = new HashMap<>();
        in.batchesInCommitOrder().forEach(b -> committedTerm.put(b.idempotencyKey(), b.term()));
        long rejectedAttempts = 0;
        for (AttemptOutcome a : in.historyOutcomes()) {
            if ("rejected".equals(a.outcome())) {
                rejectedAttempts++;
                if (!rejectionByKey.containsKey(a.batchKey())) {
                    v.add("rejections-audited: worker " + a.worker() + " reported batch " + a.batchKey() + " (term "
                            + a.term() + ") rejected but fencing.rejected_write has no row for it");
                }
                Long t = committedTerm.get(a.batchKey());
                if (t != null && t == a.term()) {
                    v.add("rejections-audited: worker " + a.worker() + " reported batch " + a.batchKey()
                            + " rejected at term " + a.term() + " but it committed at that term");
                }
            } else if ("committed".equals(a.outcome()) && !committedKeys.contains(a.batchKey())) {
                v.add("history: worker " + a.worker() + " reported batch " + a.batchKey() + " (term " + a.term()
                        + ") committed but no such batch exists");
            }
        }

        long minTerm =
                in.batchesInCommitOrder().stream().mapToLong(Batch::term).min().orElse(0);
        long maxTerm =
                in.batchesInCommitOrder().stream().mapToLong(Batch::term).max().orElse(0);
        String summary = (drained
                        ? "all " + p.total() + " payments settled exactly once"
                        : p.settled() + " of " + p.total() + " payments settled at most once (" + p.pending()
                                + " still PENDING)")
                + " in " + in.batchesInCommitOrder().size() + " batches; batch terms " + minTerm + ".." + maxTerm
                + " never go backwards in commit order; no batch below the mark in force (mark " + in.highestAccepted()
                + "); " + in.rejections().size() + " rejected write(s) audited"
                + (in.historyOutcomes().isEmpty()
                        ? ""
                        : " (" + rejectedAttempts + " rejected attempt(s) in the history files, all matched)");
        return new Report(List.copyOf(v), summary);
    }
}
