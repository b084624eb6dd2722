package dev.fenceline.election.internal;

import static dev.fenceline.election.LeadershipState.CANDIDATE;
import static dev.fenceline.election.LeadershipState.CLOSED;
import static dev.fenceline.election.LeadershipState.SUSPECT;
import static dev.fenceline.election.internal.EtcdGateway.string;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionException;
import dev.fenceline.election.ElectionKeys;
import dev.fenceline.election.ElectionListener;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.election.LossReason;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.watch.WatchEvent;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One candidate in one election: the {@link LeaderElection} API and its lifecycle (start, resign, close), and the
 * triggers the session delivers (watch events, lease news, polls), each turned into a task on the election's
 * serial executor {@link #exec}. The decisions are made by {@link ElectionStateMachine}; all state it and its
 * collaborators ({@link EtcdOperationSlot}, {@link RecordRelease}, {@link Campaigner}) keep is touched only from
 * {@link #exec}. At most one etcd operation per election is in flight; triggers that arrive meanwhile cause one
 * more evaluation afterwards.
 */
final class DefaultLeaderElection implements LeaderElection {
    private static final Logger log = LoggerFactory.getLogger(DefaultLeaderElection.class);

    private enum Lifecycle {
        LATENT,
        STARTED,
        CLOSED
    }

    private final DefaultElectionSession session;
    private final ElectionConfig config;
    private final ElectionKeys keys;
    private final String candidateId;
    private final SerialExecutor exec;
    private final LeaseKeeper keeper;

    private final AtomicReference<Lifecycle> lifecycle = new AtomicReference<>(Lifecycle.LATENT);
    private final StateAnnouncer announcer;
    private final EtcdOperationSlot slot;
    private final RecordRelease release;
    private final ElectionMetrics.PerElection meters;
    /** Assigned last in the constructor; a gauge sampled before that reads it as null. */
    private final ElectionStateMachine machine;

    DefaultLeaderElection(
            DefaultElectionSession session, String electionName, String candidateId, Map<String, String> metadata) {
        this.session = session;
        this.config = session.config();
        this.keys = config.keys(electionName);
        this.candidateId = candidateId;
        this.exec = new SerialExecutor(session.workPool());
        this.keeper = session.keeper();
        this.announcer = new StateAnnouncer(keys.election(), candidateId, keeper);
        this.slot = new EtcdOperationSlot(
                exec, session, new Backoff(config.retryBackoffMin(), config.retryBackoffMax()), this::evaluate);
        this.release = new RecordRelease(session.store(), keys, candidateId, slot);
        this.meters = session.metrics()
                .forElection(
                        electionName,
                        candidateId,
                        this,
                        o -> ((DefaultLeaderElection) o).leaderGauge(),
                        o -> ((DefaultLeaderElection) o).termGauge());
        this.machine = new ElectionStateMachine(
                session,
                keys,
                candidateId,
                Map.copyOf(metadata),
                exec,
                announcer,
                slot,
                release,
                meters,
                () -> lifecycle.get() == Lifecycle.STARTED);
    }

    // ------------------------------------------------------------------ public API

    @Override
    public String electionName() {
        return keys.election();
    }

    @Override
    public String candidateId() {
        return candidateId;
    }

    @Override
    public void start() {
        if (!lifecycle.compareAndSet(Lifecycle.LATENT, Lifecycle.STARTED)) {
            throw new ElectionException(
                    lifecycle.get() == Lifecycle.CLOSED ? "start() called after close()" : "start() called twice");
        }
        exec.execute(() -> {
            if (lifecycle.get() == Lifecycle.STARTED) {
                announcer.transition(CANDIDATE, "started", null);
                machine.evaluate();
            }
        });
    }

    @Override
    public LeadershipState state() {
        return announcer.state();
    }

    @Override
    public Optional<Leadership> leadership() {
        return Optional.ofNullable(machine.leadership());
    }

    @Override
    public Optional<LeaderRecord> observedLeader() {
        return Optional.ofNullable(machine.observedLeader());
    }

    @Override
    public Leadership awaitLeadership(Duration timeout) throws InterruptedException, TimeoutException {
        return announcer.awaitLeadership(timeout, machine::leadership);
    }

    @Override
    public void addListener(ElectionListener listener) {
        addListener(listener, session.listenerExecutor());
    }

    @Override
    public void addListener(ElectionListener listener, Executor executor) {
        if (listener == null || executor == null) {
            throw new ElectionException("addListener() needs a non-null listener and executor");
        }
        announcer.addListener(listener, executor);
    }

    @Override
    public void removeListener(ElectionListener listener) {
        announcer.removeListener(listener);
    }

    @Override
    public CompletableFuture<Void> resign() {
        Lifecycle lc = lifecycle.get();
        if (lc == Lifecycle.LATENT) {
            throw new ElectionException("resign() called before start()");
        }
        if (lc == Lifecycle.CLOSED) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        // completed on the listener executor: what the caller chains onto it must not run on an election thread
        Runnable complete = () -> CallbackContext.deliver(session.listenerExecutor(), () -> done.complete(null));
        exec.execute(() -> {
            machine.startHoldOff();
            if (machine.leadership() == null) {
                complete.run();
            } else {
                // resignNow's future never fails (the release retries until done): only its completion matters
                var unused = machine.resignNow(LossReason.RESIGNED, "resign() called", false, false)
                        .whenComplete((v, e) -> complete.run());
            }
        });
        return done;
    }

    @Override
    public void close() {
        CompletableFuture<Void> done = closeAsync();
        if (CallbackContext.inside()) {
            // Called from a listener, a stage of lost()/resign(), or an election thread: waiting here could block
            // the very thread that has to finish the close. Validity already ended; the delete completes by itself.
            log.debug(
                    "election close() from a callback: not waiting for the record delete: election={} candidate={}",
                    keys.election(),
                    candidateId);
            return;
        }
        try {
            done.get(config.callTimeout().toMillis() * 2 + 100, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            log.warn(
                    "election close: record not confirmed deleted in time; it goes with the lease: election={} "
                            + "candidate={}",
                    keys.election(),
                    candidateId);
        }
    }

    /** Non-blocking close: the future completes when a held record is deleted (or immediately). */
    CompletableFuture<Void> closeAsync() {
        return closeAsync(true);
    }

    /**
     * @param deleteRecord false when the caller revokes the lease right after (session close): revoking
     *                     removes every record of the session in one request, validity already ended here
     */
    CompletableFuture<Void> closeAsync(boolean deleteRecord) {
        Lifecycle prev = lifecycle.getAndSet(Lifecycle.CLOSED);
        if (prev == Lifecycle.CLOSED) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        exec.execute(() -> {
            slot.cancelRetry();
            if (machine.leadership() != null) {
                // resignNow's future never fails (the release retries until done): only its completion matters
                var unused = machine.resignNow(
                                LossReason.CLOSED,
                                deleteRecord ? "close() called" : "session closing: lease will be revoked",
                                false,
                                true,
                                deleteRecord)
                        .whenComplete((v, e) -> done.complete(null));
            } else if (deleteRecord && machine.campaigner().anyInDoubt()) {
                announcer.transition(CLOSED, "close() called", null);
                machine.campaigner().resolveOnClose(done);
            } else {
                announcer.transition(CLOSED, "close() called", null);
                done.complete(null);
            }
        });
        return done.whenComplete((v, e) -> {
            session.forget(this);
            meters.remove();
        });
    }

    @Override
    public String toString() {
        return "LeaderElection{election=" + keys.election() + ", candidate=" + candidateId + ", state="
                + announcer.state() + ", leadership=" + machine.leadership() + "}";
    }

    // ------------------------------------------------------------------ triggers (any thread)

    /** Re-evaluate soon. */
    void poke() {
        exec.execute(this::evaluate);
    }

    /**
     * The session's periodic check: an election without a term re-reads unless an operation is already in
     * flight. This, not the watch, bounds how late a follower notices an expired leader (see the session).
     */
    void pollIfWaiting() {
        exec.execute(() -> {
            if (lifecycle.get() == Lifecycle.STARTED
                    && machine.leadership() == null
                    && !slot.busy()
                    && !release.pending()) {
                machine.evaluate();
            }
        });
    }

    void onWatchEvent(WatchEvent event) {
        exec.execute(() -> {
            LeadershipImpl l = machine.leadership();
            KeyValue kv = event.getKeyValue();
            if (lifecycle.get() == Lifecycle.CLOSED) {
                // A campaign with unknown outcome committed after close() read the key: give the record back.
                if (event.getEventType() == WatchEvent.EventType.PUT
                        && l == null
                        && !release.pending()
                        && kv.getLease() != 0
                        && kv.getLease() == keeper.view().leaseId()
                        && string(kv.getKey()).equals(keys.leader())) {
                    release.release(
                            kv.getLease(),
                            kv.getModRevision(),
                            kv.getValue().getBytes(),
                            false,
                            new CompletableFuture<>());
                }
                return;
            }
            // Our own campaign transaction (record + term at one revision) needs no re-read.
            if (l != null
                    && event.getEventType() == WatchEvent.EventType.PUT
                    && kv.getModRevision() == l.recordModRevision) {
                return;
            }
            // Fast path for handover: the leader key was deleted, so try the CAS at once on the last read. The
            // transaction remains the only arbiter. Not with leaseLossHoldOff: the resign marker arrives as a later
            // event of the same transaction, so only a read tells a resign from a loss.
            if (event.getEventType() == WatchEvent.EventType.DELETE
                    && l == null
                    && !slot.busy()
                    && !release.pending()
                    && config.leaseLossHoldOff().isZero()
                    && lifecycle.get() == Lifecycle.STARTED
                    && string(kv.getKey()).equals(keys.leader())
                    && machine.decideOnLeaderDeleted()) {
                return;
            }
            machine.evaluate();
        });
    }

    /**
     * The session saw another etcd history (see {@link ClusterHistory}): re-read. A pending guarded delete
     * targets a record of the old history (its compare revision could match a stranger's record in the new
     * one), so it is dropped; a leftover of ours in the new history is found and deleted by the re-read.
     */
    void onClusterChanged() {
        exec.execute(() -> {
            release.drop();
            machine.evaluate();
        });
    }

    void onLeaseSuspect(long leaseId, String reason) {
        exec.execute(() -> machine.suspect(leaseId, reason));
    }

    void onLeaseConfirmed(long leaseId) {
        exec.execute(() -> {
            if (announcer.state() == SUSPECT) {
                machine.evaluate(); // verify by linearizable read before resuming
            }
        });
    }

    void onLeaseGone(long leaseId, String reason) {
        exec.execute(() -> {
            machine.campaigner().forgetInDoubt();
            release.dropIfOnLease(leaseId); // the record went with the lease
            machine.leaseGone(leaseId, reason);
        });
    }

    /** On {@link #exec}: one evaluation (the retry timer and the operation slot call this too). */
    private void evaluate() {
        machine.evaluate();
    }

    private double leaderGauge() {
        ElectionStateMachine m = machine;
        LeadershipImpl l = m != null ? m.leadership() : null;
        return l != null && l.isValidNow() ? 1 : 0;
    }

    private double termGauge() {
        ElectionStateMachine m = machine;
        return m != null ? m.term() : 0;
    }
}
