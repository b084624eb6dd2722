package dev.fenceline.faults.history;

/** A worker's election state change, from its history file; {@code lease} is 0 when not recorded. */
public record StateChange(String worker, long monoNs, long wallMs, String state, long term, long lease) {

    public StateChange(String worker, long monoNs, long wallMs, String state, long term) {
        this(worker, monoNs, wallMs, state, term, 0);
    }
}
