package dev.fenceline.faults.check;

/** One broken property, with a precise, human-readable explanation. */
public record Violation(Check check, String explanation) {
    @Override
    public String toString() {
        return check.title() + ": " + explanation;
    }
}
