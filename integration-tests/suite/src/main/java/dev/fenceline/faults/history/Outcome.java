package dev.fenceline.faults.history;

import java.util.Locale;

/** How a worker says a batch attempt ended. An attempt without an end record (process killed) is UNKNOWN. */
public enum Outcome {
    COMMITTED,
    REJECTED,
    FAILED,
    UNKNOWN;

    public static Outcome parse(String s) {
        if (s == null || s.isBlank()) {
            return UNKNOWN;
        }
        try {
            return valueOf(s.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            return UNKNOWN;
        }
    }
}
