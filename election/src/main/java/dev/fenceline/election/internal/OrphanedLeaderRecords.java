package dev.fenceline.election.internal;

import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.watch.WatchEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes leader records on the session's own lease for elections the session no longer runs: a campaign of a
 * closed election whose outcome was unknown committed late. Nobody could use such a record, and it would block the
 * election until the lease ends.
 */
final class OrphanedLeaderRecords {
    /** The session's category: operators filter the session's log lines by it. */
    private static final Logger log = LoggerFactory.getLogger(DefaultElectionSession.class);

    private final EtcdGateway etcd;
    private final LeaseKeeper keeper;
    private final SessionThreads threads;

    OrphanedLeaderRecords(EtcdGateway etcd, LeaseKeeper keeper, SessionThreads threads) {
        this.etcd = etcd;
        this.keeper = keeper;
        this.threads = threads;
    }

    /**
     * A watch event under election {@code name}, for which the session has no handle; {@code rest} is its key
     * after the key prefix. Runs inside jetcd's watch callback, so the delete is handed to the work pool.
     */
    void onEventWithoutElection(String name, String rest, WatchEvent ev) {
        if (ev.getEventType() == WatchEvent.EventType.PUT
                && rest.equals(name + "/leader")
                && ev.getKeyValue().getLease() != 0
                && ev.getKeyValue().getLease() == keeper.view().leaseId()) {
            KeyValue orphan = ev.getKeyValue();
            // leave jetcd's watch lock first; dropped while closing, when the lease revoke removes the record
            threads.execute(() -> delete(name, orphan));
        }
    }

    /** Deletes {@code kv} guarded on its mod revision and exact bytes, so a newer record is never touched. */
    private void delete(String election, KeyValue kv) {
        log.warn(
                "deleting a leader record on this session's lease for an election it no longer runs: election={} "
                        + "lease={} mod_revision={}",
                election,
                kv.getLease(),
                kv.getModRevision());
        // best effort, and a failure is logged by the callback: the record goes with the lease anyway
        var unused = etcd.txn(t -> t.If(
                                new Cmp(kv.getKey(), Cmp.Op.EQUAL, CmpTarget.modRevision(kv.getModRevision())),
                                new Cmp(kv.getKey(), Cmp.Op.EQUAL, CmpTarget.value(kv.getValue())))
                        .Then(Op.delete(kv.getKey(), DeleteOption.DEFAULT)))
                .whenComplete((r, err) -> {
                    if (err != null) {
                        log.warn(
                                "deleting the orphaned record failed: election={} error=\"{}\"; it goes with the lease",
                                election,
                                EtcdFailure.describe(err));
                    }
                });
    }
}
