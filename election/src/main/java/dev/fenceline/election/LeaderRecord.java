package dev.fenceline.election;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * The JSON value of {@code <prefix><election>/leader}, bound to the leader's lease:
 * <pre>{"leader_id":"w1","term":7,"lease_id":7587869325843513348,"nonce":"9f0c...","metadata":{},"acquired_at":"2026-11-30T17:00:00Z"}</pre>
 *
 * @param leaderId   candidate id
 * @param term       term assigned by the campaign transaction (equals the {@code term} key it wrote)
 * @param leaseId    lease the key is attached to (decimal; {@code etcdctl lease timetolive} wants hex)
 * @param nonce      random per-campaign value
 * @param metadata   free-form candidate metadata (host, pid, version ...)
 * @param acquiredAt wall clock of the campaign (informational)
 */
public record LeaderRecord(
        String leaderId, long term, long leaseId, String nonce, Map<String, String> metadata, Instant acquiredAt) {

    public LeaderRecord {
        Objects.requireNonNull(leaderId, "leaderId");
        Objects.requireNonNull(nonce, "nonce");
        metadata = metadata == null ? Map.of() : Map.copyOf(metadata);
        Objects.requireNonNull(acquiredAt, "acquiredAt");
    }

    /** The lease id as etcdctl prints and accepts it (lower-case hex). */
    public String leaseIdHex() {
        return Long.toHexString(leaseId);
    }
}
