package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionKeys;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The election's domain operations on the coordination store; the only thing the state machine asks of etcd.
 * Every write is a guarded transaction, so a stale caller can never overwrite someone else's state. A future
 * that fails may still have taken effect unless {@link EtcdFailure#isDefinite} says otherwise.
 */
interface ElectionStore {
    /** Linearizable read of every key of the election. */
    CompletableFuture<List<StoredKey>> read(ElectionKeys keys);

    /** Linearizable read of the leader key alone. */
    CompletableFuture<Optional<StoredKey>> readLeader(ElectionKeys keys);

    /**
     * The campaign: if the leader key is absent, the term and the floor keys are unchanged since read and the
     * kill switch is absent, put {@code record} on {@code leaseId} and {@code term}, atomically.
     *
     * @return the revision it committed at, or empty if a compare failed (someone moved first)
     */
    CompletableFuture<Optional<Long>> campaign(
            ElectionKeys keys, long leaseId, byte[] record, long term, long termModRevision, long floorModRevision);

    /**
     * Deletes the leader record only if it is still exactly this one (mod revision and bytes), optionally with
     * the resign request, and in the same transaction writes the {@code resigned} marker with the record's term.
     * @return whether it was deleted
     */
    CompletableFuture<Boolean> deleteRecord(
            ElectionKeys keys, long modRevision, byte[] value, boolean withResignRequest);

    /** Deletes the resign request only if it is still this one. */
    CompletableFuture<Boolean> deleteResignRequest(ElectionKeys keys, long modRevision);
}
