package dev.fenceline.election.internal;

import static dev.fenceline.election.internal.EtcdGateway.bytes;
import static dev.fenceline.election.internal.EtcdGateway.string;

import dev.fenceline.election.ElectionKeys;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/** {@link ElectionStore} on etcd: the transactions of the protocol, built in one place. */
final class EtcdElectionStore implements ElectionStore {
    private final EtcdGateway etcd;

    EtcdElectionStore(EtcdGateway etcd) {
        this.etcd = etcd;
    }

    static StoredKey stored(KeyValue kv) {
        return new StoredKey(
                string(kv.getKey()),
                kv.getModRevision(),
                kv.getLease(),
                kv.getValue().getBytes());
    }

    @Override
    public CompletableFuture<List<StoredKey>> read(ElectionKeys keys) {
        return etcd.getPrefix(keys.root())
                .thenApply(
                        r -> r.getKvs().stream().map(EtcdElectionStore::stored).toList());
    }

    @Override
    public CompletableFuture<Optional<StoredKey>> readLeader(ElectionKeys keys) {
        return etcd.get(keys.leader())
                .thenApply(r -> r.getKvs().stream().findFirst().map(EtcdElectionStore::stored));
    }

    @Override
    public CompletableFuture<Optional<Long>> campaign(
            ElectionKeys keys, long leaseId, byte[] record, long term, long termModRevision, long floorModRevision) {
        return etcd.txn(txn -> txn.If(
                                new Cmp(bytes(keys.leader()), Cmp.Op.EQUAL, CmpTarget.createRevision(0)),
                                new Cmp(bytes(keys.term()), Cmp.Op.EQUAL, CmpTarget.modRevision(termModRevision)),
                                new Cmp(bytes(keys.termFloor()), Cmp.Op.EQUAL, CmpTarget.modRevision(floorModRevision)),
                                new Cmp(bytes(keys.paused()), Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                        .Then(
                                Op.put(
                                        bytes(keys.leader()),
                                        ByteSequence.from(record),
                                        PutOption.builder().withLeaseId(leaseId).build()),
                                Op.put(bytes(keys.term()), bytes(Long.toString(term)), PutOption.DEFAULT)))
                .thenApply(r -> r.isSucceeded() ? Optional.of(r.getHeader().getRevision()) : Optional.empty());
    }

    @Override
    public CompletableFuture<Boolean> deleteRecord(
            ElectionKeys keys, long modRevision, byte[] value, boolean withResignRequest) {
        return etcd.txn(txn -> {
                    List<Op> ops = new ArrayList<>();
                    ops.add(Op.delete(bytes(keys.leader()), DeleteOption.DEFAULT));
                    if (withResignRequest) {
                        ops.add(Op.delete(bytes(keys.resignRequest()), DeleteOption.DEFAULT));
                    }
                    // the resign marker, in the same guarded transaction: followers tell a resign from a lost lease by
                    // it
                    resignedTerm(value)
                            .ifPresent(term -> ops.add(
                                    Op.put(bytes(keys.resigned()), bytes(Long.toString(term)), PutOption.DEFAULT)));
                    // mod revision AND value: the value (with its random nonce) makes it ours in any cluster history;
                    // after
                    // a rebuild the same mod revision can belong to someone else's record
                    return txn.If(
                                    new Cmp(bytes(keys.leader()), Cmp.Op.EQUAL, CmpTarget.modRevision(modRevision)),
                                    new Cmp(
                                            bytes(keys.leader()),
                                            Cmp.Op.EQUAL,
                                            CmpTarget.value(ByteSequence.from(value))))
                            .Then(ops.toArray(Op[]::new));
                })
                .thenApply(r -> r.isSucceeded());
    }

    /** The term of a record we wrote (always readable); empty for anything else. */
    private static Optional<Long> resignedTerm(byte[] value) {
        try {
            return Optional.of(LeaderRecordCodec.decode(value).term());
        } catch (IllegalArgumentException notOurs) {
            return Optional.empty();
        }
    }

    @Override
    public CompletableFuture<Boolean> deleteResignRequest(ElectionKeys keys, long modRevision) {
        return etcd.txn(txn -> txn.If(
                                new Cmp(bytes(keys.resignRequest()), Cmp.Op.EQUAL, CmpTarget.modRevision(modRevision)))
                        .Then(Op.delete(bytes(keys.resignRequest()), DeleteOption.DEFAULT)))
                .thenApply(r -> r.isSucceeded());
    }
}
