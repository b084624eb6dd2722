package dev.fenceline.faults.history;

import java.time.Instant;

/** A fencing.term_history row: the mark of {@code resource} advanced to {@code term} at {@code acceptedAt}. */
public record TermMark(String resource, long term, String leaderId, Instant acceptedAt) {}
