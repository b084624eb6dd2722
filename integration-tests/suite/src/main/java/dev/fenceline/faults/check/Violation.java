package dev.fenceline.faults.check;

/**
 * One broken property, with a precise, human-readable explanation; {@code faultIndex} is the injection it belongs to
 * when the checker knows it (a rogue write's), else null.
 */
public record Violation(Check check, String explanation, Integer faultIndex) {
    public Violation(Check check, String explanation) {
        this(check, explanation, null);
    }

    /** Whether this violation belongs to injection {@code index} #kind: by its index, or named as "fault #N kind ". */
    public boolean concerns(int index, String kind) {
        return faultIndex != null ? faultIndex == index : explanation.contains("fault #" + index + " " + kind + " ");
    }

    @Override
    public String toString() {
        return check.title() + ": " + explanation;
    }
}
