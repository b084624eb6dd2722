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
public record CheckResult(long seed, List<Violation> violations, List<FaultOutcome> faultOutcomes,
                          long leaderOverlapNs, long crossRebuildOverlapNs, boolean validityAvailable,
                          Map<Check, Integer> checkedItems) {

    public CheckResult {
        violations = List.copyOf(violations);
        faultOutcomes = List.copyOf(faultOutcomes);
        checkedItems = Map.copyOf(checkedItems);
    }

    public boolean ok() {
        return violations.isEmpty();
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
        if (ok()) {
            sb.append("history check passed (seed ").append(seed).append(")");
            return sb.toString();
        }
        sb.append(violations.size()).append(" violation(s) (seed ").append(seed)
                .append("; rerun with the same seed to reproduce the fault schedule):");
        for (Violation v : violations) {
            sb.append("\n  - ").append(v);
        }
        return sb.toString();
    }
}
