package dev.fenceline.faults.history;

/** A worker's election state change, from its history file. */
public record StateChange(String worker, long monoNs, long wallMs, String state, long term) {
}
