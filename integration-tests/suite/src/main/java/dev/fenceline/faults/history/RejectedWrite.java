package dev.fenceline.faults.history;

import java.time.Instant;

/** A fencing.rejected_write audit row. */
public record RejectedWrite(
        long id,
        String resource,
        long offeredTerm,
        long highestAccepted,
        String leaderId,
        String tableName,
        String businessKey,
        Instant rejectedAt) {}
