package dev.fenceline.faults.check;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What the checker found. {@link #ok()} is true when there is no violation. {@link #explain()} names the seed and
 * every violation, one per line, so a failing run can be reproduced. {@code crossRebuildOverlapNs} is leadership overlap
 * between a leader of a wiped coordinator and a leader of its replacement: expected, not a violation (the database
 * fence rejects the old term).
 */
public record CheckResult(
        long seed,
        List<Violation> violations,
        List<FaultOutcome> faultOutcomes,
        long leaderOverlapNs,
        long crossRebuildOverlapNs,
        boolean validityAvailable,
        Map<Check, Integer> checkedItems,
        AsyncLoss asyncLoss,
        long etcdStallOverlapNs,
        RogueSummary rogue) {

    public CheckResult(
            long seed,
            List<Violation> violations,
            List<FaultOutcome> faultOutcomes,
            long leaderOverlapNs,
            long crossRebuildOverlapNs,
            boolean validityAvailable,
            Map<Check, Integer> checkedItems,
            AsyncLoss asyncLoss) {
        this(
                seed,
                violations,
                faultOutcomes,
                leaderOverlapNs,
                crossRebuildOverlapNs,
                validityAvailable,
                checkedItems,
                asyncLoss,
                0,
                RogueSummary.NONE);
    }

    public CheckResult(
            long seed,
            List<Violation> violations,
            List<FaultOutcome> faultOutcomes,
            long leaderOverlapNs,
            long crossRebuildOverlapNs,
            boolean validityAvailable,
            Map<Check, Integer> checkedItems) {
        this(
                seed,
                violations,
                faultOutcomes,
                leaderOverlapNs,
                crossRebuildOverlapNs,
                validityAvailable,
                checkedItems,
                AsyncLoss.NONE);
    }

    public CheckResult {
        java.util.Objects.requireNonNull(asyncLoss, "asyncLoss");
        java.util.Objects.requireNonNull(rogue, "rogue");
        violations = List.copyOf(violations);
        faultOutcomes = List.copyOf(faultOutcomes);
        checkedItems = Map.copyOf(checkedItems);
    }

    /** True when no finding breaks a property; acknowledged commits lost by an asynchronous failover do not count. */
    public boolean ok() {
        return safetyViolations().isEmpty();
    }

    /** Every finding but {@link Check#LOST_BY_ASYNC_FAILOVER} and the election findings. */
    public List<Violation> safetyViolations() {
        return violations.stream().filter(v -> v.check().isViolation()).toList();
    }

    /** Acknowledged commits a failover to an asynchronous standby lost (expected there; not a violation). */
    public List<Violation> lostByAsyncFailover() {
        return violations(Check.LOST_BY_ASYNC_FAILOVER);
    }

    /** Findings about the election (slow succession, validity overlaps around a stalled etcd member): reported, not failed. */
    public List<Violation> electionFindings() {
        return violations.stream().filter(v -> v.check().isElectionFinding()).toList();
    }

    public List<Violation> violations(Check check) {
        List<Violation> out = new ArrayList<>();
        for (Violation v : violations) {
            if (v.check() == check) {
                out.add(v);
            }
        }
        return out;
    }

    public String explain() {
        StringBuilder sb = new StringBuilder();
        List<Violation> lost = lostByAsyncFailover();
        if (ok()) {
            sb.append("history check passed (seed ").append(seed).append(")");
        } else {
            List<Violation> safety = safetyViolations();
            sb.append(safety.size())
                    .append(" violation(s) (seed ")
                    .append(seed)
                    .append("; rerun with the same seed to reproduce the fault schedule):");
            for (Violation v : safety) {
                sb.append("\n  - ").append(v);
            }
        }
        List<Violation> findings = electionFindings();
        if (!findings.isEmpty()) {
            sb.append("\nelection findings (reported, not violations: the database fence covers them):");
            for (Violation v : findings) {
                sb.append("\n  - ").append(v);
            }
        }
        if (!lost.isEmpty()) {
            sb.append(
                            "\nacknowledged commits lost by a failover to an asynchronous standby (durability, expected without "
                                    + "a synchronous standby; not a fencing violation): ")
                    .append(asyncLoss.payments())
                    .append(" inserted payment(s), ")
                    .append(asyncLoss.batches())
                    .append(" batch(es) reported committed, ")
                    .append(asyncLoss.auditRows())
                    .append(" audit row(s) of rejected attempts:");
            for (Violation v : lost) {
                sb.append("\n  - ").append(v.explanation());
            }
        }
        return sb.toString();
    }
}
