package dev.fenceline.election.internal;

import static dev.fenceline.election.LeadershipState.CANDIDATE;
import static dev.fenceline.election.LeadershipState.CLOSED;
import static dev.fenceline.election.LeadershipState.FOLLOWER;
import static dev.fenceline.election.LeadershipState.LATENT;
import static dev.fenceline.election.LeadershipState.LEADER;
import static dev.fenceline.election.LeadershipState.LOST;
import static dev.fenceline.election.LeadershipState.SUSPECT;
import static dev.fenceline.election.internal.EtcdGateway.bytes;
import static dev.fenceline.election.internal.EtcdGateway.string;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionEvent;
import dev.fenceline.election.ElectionException;
import dev.fenceline.election.ElectionKeys;
import dev.fenceline.election.ElectionListener;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.election.LossReason;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.watch.WatchEvent;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The election state machine. All mutable state below the "serial-executor confined" line is touched only
 * from {@link #exec}; every trigger (start, watch event, lease news, timer, resign, close) is a task on it.
 * At most one etcd operation per election is in flight ({@link #opInFlight}); triggers that arrive meanwhile
 * set {@link #dirty} and cause one more evaluation afterwards.
 *
 * <p>One evaluation = one linearizable range read of the election's keys followed by a decision:
 * <ul>
 *   <li>holding a term and the record still carries our lease and nonce: stay (or resign if paused or asked
 *       to; or SUSPECT→LEADER if the lease keeper has confirmed a renewal since);</li>
 *   <li>holding a term but the record is gone or foreign: LOST;</li>
 *   <li>record present with our lease and the nonce of a campaign whose outcome we did not learn: we won
 *       that campaign (resolution of unknown outcomes);</li>
 *   <li>record present with our lease and an unknown nonce: a leftover of ours, delete it (guarded);</li>
 *   <li>record present otherwise: FOLLOWER, wait for the watch;</li>
 *   <li>record absent, not paused, not holding off, lease usable: campaign (CAS transaction).</li>
 * </ul>
 */
final class DefaultLeaderElection implements LeaderElection {
  private static final Logger log = LoggerFactory.getLogger(DefaultLeaderElection.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  private enum Lifecycle { LATENT, STARTED, CLOSED }

  private final DefaultElectionSession session;
  private final ElectionConfig config;
  private final ElectionKeys keys;
  private final String candidateId;
  private final Map<String, String> metadata;
  private final SerialExecutor exec;
  private final LeaseKeeper keeper;
  private final EtcdGateway etcd;
  private final ElectionMetrics.PerElection meters;
  private final AtomicReference<Lifecycle> lifecycle = new AtomicReference<>(Lifecycle.LATENT);
  private final List<ListenerEntry> listeners = new CopyOnWriteArrayList<>();
  private final Object monitor = new Object();
  private volatile LeadershipState state = LATENT;
  private volatile LeadershipImpl leadership;
  private volatile long lastTermSeen;

  // ---- serial-executor confined ----
  private boolean opInFlight;
  private boolean dirty;
  /** Campaigns whose transaction outcome is unknown: nonce -> (lease, term mod revision they compared). */
  private final Map<String, long[]> unresolved = new HashMap<>();
  private RecordToDelete recordToDelete;
  private long holdOffUntilNanos;
  private boolean holdingOff;
  private long leaderAbsentSinceNanos = -1;
  private final Backoff backoff;
  private ScheduledFuture<?> retryTask;
  /** The last successful read (null before the first); lets a delete event go straight to the CAS. */
  private Snapshot lastSnapshot;

  /** The bytes of the record we hold (they contain its random nonce); serial-executor confined. */
  private io.etcd.jetcd.ByteSequence heldRecord;

  /**
   * A guarded delete of the leader key: mod revision AND value must match. The value (with its random nonce)
   * makes it ours in any cluster history: after a coordinator rebuild a retried delete may reach the new
   * cluster before the change is detected, where the same mod revision can belong to someone else's record.
   */
  private record RecordToDelete(long leaseId, long modRevision, io.etcd.jetcd.ByteSequence value,
      boolean withResignRequest,
      CompletableFuture<Void> done) {}

  DefaultLeaderElection(DefaultElectionSession session, String electionName, String candidateId,
      Map<String, String> metadata) {
    this.session = session;
    this.config = session.config();
    this.keys = config.keys(electionName);
    this.candidateId = candidateId;
    this.metadata = Map.copyOf(metadata);
    this.exec = new SerialExecutor(session.workPool());
    this.keeper = session.keeper();
    this.etcd = session.etcd();
    this.backoff = new Backoff(config.retryBackoffMin(), config.retryBackoffMax());
    this.meters = session.metrics().forElection(electionName, candidateId, this,
        o -> ((DefaultLeaderElection) o).leaderGauge(), o -> ((DefaultLeaderElection) o).termGauge());
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
      throw new ElectionException(lifecycle.get() == Lifecycle.CLOSED
          ? "start() called after close()" : "start() called twice");
    }
    exec.execute(() -> {
      if (lifecycle.get() == Lifecycle.STARTED) {
        transition(CANDIDATE, "started", null);
        evaluate();
      }
    });
  }

  @Override
  public LeadershipState state() {
    return state;
  }

  @Override
  public Optional<Leadership> leadership() {
    return Optional.ofNullable(leadership);
  }

  @Override
  public Leadership awaitLeadership(Duration timeout) throws InterruptedException, TimeoutException {
    long deadline = now() + timeout.toNanos();
    synchronized (monitor) {
      while (true) {
        LeadershipImpl l = leadership;
        if (state == LEADER && l != null && l.isValidNow()) {
          return l;
        }
        if (state == CLOSED) {
          throw new ElectionException("election '" + keys.election() + "' is closed: no leadership to await");
        }
        long left = deadline - now();
        if (left <= 0) {
          throw new TimeoutException("candidate '" + candidateId + "' did not become leader of election '"
              + keys.election() + "' within " + timeout.toMillis() + "ms (state " + state + ")");
        }
        TimeUnit.NANOSECONDS.timedWait(monitor, Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
      }
    }
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
    listeners.add(new ListenerEntry(listener, new SerialExecutor(executor)));
  }

  @Override
  public void removeListener(ElectionListener listener) {
    listeners.removeIf(e -> e.listener == listener);
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
      startHoldOff();
      if (leadership == null) {
        complete.run();
      } else {
        resignNow(LossReason.RESIGNED, "resign() called", false, false).whenComplete((v, e) -> complete.run());
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
      log.debug("election close() from a callback: not waiting for the record delete: election={} candidate={}",
          keys.election(), candidateId);
      return;
    }
    try {
      done.get(config.callTimeout().toMillis() * 2 + 100, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      log.warn("election close: record not confirmed deleted in time; it goes with the lease: election={} "
          + "candidate={}", keys.election(), candidateId);
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
      if (retryTask != null) {
        retryTask.cancel(false);
      }
      if (leadership != null) {
        resignNow(LossReason.CLOSED, deleteRecord ? "close() called" : "session closing: lease will be revoked",
            false, true, deleteRecord).whenComplete((v, e) -> done.complete(null));
      } else if (deleteRecord && !unresolved.isEmpty()) {
        transition(CLOSED, "close() called", null);
        resolvePendingCampaignsOnClose(done);
      } else {
        transition(CLOSED, "close() called", null);
        done.complete(null);
      }
    });
    return done.whenComplete((v, e) -> {
      session.forget(this);
      meters.remove();
    });
  }

  /**
   * Closing while a campaign's outcome is unknown: if it committed, the record sits on a lease the session
   * keeps renewing and nobody else could lead until the session closes. One read decides: a record with our
   * lease and a pending campaign's nonce is deleted, guarded on its mod revision and exact bytes. A campaign
   * that commits only after this read is removed by the session, which deletes any record on its lease that
   * appears for an election it has no handle for.
   */
  private void resolvePendingCampaignsOnClose(CompletableFuture<Void> done) {
    etcd.get(keys.leader()).whenCompleteAsync((r, e) -> {
      if (e == null && !r.getKvs().isEmpty()) {
        KeyValue kv = r.getKvs().get(0);
        String nonce = null;
        try {
          nonce = LeaderRecordCodec.decode(kv.getValue().getBytes()).nonce();
        } catch (IllegalArgumentException unreadable) {
          // not ours: ours are always readable
        }
        long[] pending = nonce == null ? null : unresolved.get(nonce);
        if (pending != null && pending[0] == kv.getLease()) {
          log.info("closing: a campaign with unknown outcome had committed; deleting its record: election={} "
              + "candidate={} nonce={}", keys.election(), candidateId, nonce);
          unresolved.clear();
          recordToDelete = new RecordToDelete(kv.getLease(), kv.getModRevision(), kv.getValue(), false, done);
          if (!opInFlight) {
            deleteRecord();
          } else {
            dirty = true;
          }
          return;
        }
      } else if (e != null) {
        log.warn("closing: could not read whether a campaign with unknown outcome committed: election={} "
            + "error=\"{}\"; the session removes such a record when it sees it", keys.election(),
            EtcdFailure.describe(e));
      }
      unresolved.clear();
      done.complete(null);
    }, exec);
  }

  @Override
  public String toString() {
    return "LeaderElection{election=" + keys.election() + ", candidate=" + candidateId + ", state=" + state
        + ", leadership=" + leadership + "}";
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
      if (lifecycle.get() == Lifecycle.STARTED && leadership == null && !opInFlight && recordToDelete == null) {
        evaluate();
      }
    });
  }

  void onWatchEvent(WatchEvent event) {
    exec.execute(() -> {
      LeadershipImpl l = leadership;
      KeyValue kv = event.getKeyValue();
      if (lifecycle.get() == Lifecycle.CLOSED) {
        // A campaign with unknown outcome committed after close() read the key: give the record back.
        if (event.getEventType() == WatchEvent.EventType.PUT && l == null && recordToDelete == null
            && kv.getLease() != 0 && kv.getLease() == keeper.view().leaseId()
            && string(kv.getKey()).equals(keys.leader())) {
          recordToDelete = new RecordToDelete(kv.getLease(), kv.getModRevision(), kv.getValue(), false,
              new CompletableFuture<>());
          if (!opInFlight) {
            deleteRecord();
          } else {
            dirty = true;
          }
        }
        return;
      }
      // Our own campaign transaction (record + term at one revision) needs no re-read.
      if (l != null && event.getEventType() == WatchEvent.EventType.PUT
          && kv.getModRevision() == l.recordModRevision) {
        return;
      }
      // Fast path for handover: the leader key was deleted and our last read is otherwise current, so try
      // the CAS at once (saves one linearizable read). If anything else changed, the compares fail and the
      // normal read-decide path runs. The transaction remains the only arbiter.
      if (event.getEventType() == WatchEvent.EventType.DELETE && l == null && !opInFlight && recordToDelete == null
          && lifecycle.get() == Lifecycle.STARTED && lastSnapshot != null && !lastSnapshot.paused
          && lastSnapshot.epoch == etcd.history().mark().epoch() // never CAS with revisions of an older history
          && !(holdingOff && holdOffUntilNanos - now() > 0)
          && string(kv.getKey()).equals(keys.leader())) {
        LeaseKeeper.View lease = keeper.view();
        if (lease.health() == LeaseKeeper.Health.HEALTHY) {
          Snapshot s = lastSnapshot;
          lastSnapshot = null; // used once
          if (leaderAbsentSinceNanos < 0) {
            leaderAbsentSinceNanos = now();
          }
          campaign(s, lease.leaseId());
          return;
        }
      }
      evaluate();
    });
  }

  /**
   * The session saw another etcd history (see {@link ClusterHistory}): re-read. A pending guarded delete
   * targets a record of the old history (its compare revision could match a stranger's record in the new
   * one), so it is dropped; a leftover of ours in the new history is found and deleted by the re-read.
   */
  void onClusterChanged() {
    exec.execute(() -> {
      if (recordToDelete != null) {
        recordToDelete.done().complete(null);
        recordToDelete = null;
      }
      evaluate();
    });
  }

  void onLeaseSuspect(long leaseId, String reason) {
    exec.execute(() -> {
      LeadershipImpl l = leadership;
      if (l != null && l.leaseId() == leaseId && state == LEADER) {
        l.invalidate(); // stop work before anyone hears about it
        meters.suspectTransitions.increment();
        transition(SUSPECT, reason, l);
      }
    });
  }

  void onLeaseConfirmed(long leaseId) {
    exec.execute(() -> {
      if (state == SUSPECT) {
        evaluate(); // verify by linearizable read before resuming
      }
    });
  }

  void onLeaseGone(long leaseId, String reason) {
    exec.execute(() -> {
      unresolved.clear();
      if (recordToDelete != null && recordToDelete.leaseId() == leaseId) {
        recordToDelete.done().complete(null); // the record went with the lease
        recordToDelete = null;
      }
      LeadershipImpl l = leadership;
      if (l != null && l.leaseId() == leaseId) {
        loseTerm(LossReason.LEASE_EXPIRED, reason);
        transition(CANDIDATE, "waiting for a new lease", null);
      }
    });
  }

  // ------------------------------------------------------------------ the state machine (serial executor)

  private void evaluate() {
    if (opInFlight) {
      dirty = true;
      return;
    }
    if (session.isCrashed()) {
      return;
    }
    if (recordToDelete != null) {
      deleteRecord();
      return;
    }
    if (lifecycle.get() != Lifecycle.STARTED) {
      return;
    }
    dirty = false;
    opInFlight = true;
    long epoch = etcd.history().mark().epoch();
    etcd.getPrefix(keys.root()).whenCompleteAsync((resp, err) -> {
      opInFlight = false;
      if (err != null) {
        log.debug("election read failed: election={} error=\"{}\"", keys.election(), LeaseKeeper.describe(err));
        scheduleRetry(backoff.next());
      } else {
        decide(resp, epoch);
      }
      if (dirty) {
        evaluate();
      }
    }, exec);
  }

  private void decide(GetResponse resp, long epoch) {
    if (recordToDelete != null) {
      // A resign happened while this read was in flight: the read may still show our record. Deleting it
      // comes first; the next evaluation reads again.
      dirty = true;
      return;
    }
    if (lifecycle.get() != Lifecycle.STARTED) {
      return;
    }
    Snapshot s;
    try {
      s = Snapshot.of(keys, resp);
    } catch (IllegalArgumentException e) {
      // A malformed term or floor key must never let us guess a term: wait for an operator.
      log.error("election keys unusable, not campaigning: election={} problem=\"{}\"", keys.election(), e.getMessage());
      releaseIfHeld(LossReason.RECORD_GONE, "unusable keys: " + e.getMessage());
      transition(FOLLOWER, "unusable keys: " + e.getMessage(), null);
      scheduleRetry(config.retryBackoffMax());
      return;
    }
    backoff.reset();
    s.epoch = epoch;
    lastSnapshot = s;
    lastTermSeen = Math.max(lastTermSeen, s.term);
    LeaseKeeper.View lease = keeper.view();
    LeaderRecord rec = s.record;

    LeadershipImpl l = leadership;
    if (l != null) {
      boolean stillOurs = rec != null && rec.leaseId() == l.leaseId() && rec.nonce().equals(l.nonce());
      if (stillOurs) {
        if (s.paused) {
          resignNow(LossReason.PAUSED, "kill switch " + keys.paused() + " present", false, false);
        } else if (s.resignRequest != null && s.resignRequestTerm(l.term()) == l.term()) {
          startHoldOff();
          resignNow(LossReason.RESIGN_REQUESTED, "resign requested via " + keys.resignRequest(), true, false);
        } else {
          if (s.resignRequest != null) {
            deleteStaleResignRequest(s.resignRequest);
          }
          if (state == SUSPECT && lease.validNow(l.leaseId())) {
            l.validate();
            transition(LEADER, "verified by linearizable read: record and lease still held", l);
          }
        }
        return;
      }
      loseTerm(LossReason.RECORD_GONE, rec == null
          ? (s.leader == null ? "leader record deleted" : "leader record unreadable")
          : "leader record now held by " + rec.leaderId() + " term " + rec.term());
    }

    if (s.leader != null) {
      leaderAbsentSinceNanos = -1;
      if (rec != null && unresolved.containsKey(rec.nonce()) && rec.leaseId() == lease.leaseId()) {
        won(rec, s.leader.getValue(), s.leader.getModRevision(),
            "campaign with unknown outcome resolved by read: it committed");
        return;
      }
      if (rec != null && rec.leaseId() == lease.leaseId() && lease.health() != LeaseKeeper.Health.GONE) {
        // Bound to our lease but not a campaign we know: a leftover of ours (e.g. a resign whose delete
        // outcome was lost). Nobody else can use it and it would block everyone: delete it, guarded.
        recordToDelete = new RecordToDelete(lease.leaseId(), s.leader.getModRevision(), s.leader.getValue(),
            false, new CompletableFuture<>());
        deleteRecord();
        return;
      }
      long termModRev = s.termModRevision;
      unresolved.values().removeIf(p -> p[1] != termModRev); // the term moved on: those can never commit
      transition(FOLLOWER, rec == null ? "leader record unreadable" : "leader is " + rec.leaderId() + " term "
          + rec.term(), null);
      return;
    }

    // No leader record.
    long termModRev = s.termModRevision;
    unresolved.values().removeIf(p -> p[1] != termModRev);
    if (s.paused) {
      transition(FOLLOWER, "paused: kill switch " + keys.paused() + " present", null);
      return;
    }
    if (holdingOff) {
      long left = holdOffUntilNanos - now();
      if (left > 0) {
        transition(FOLLOWER, "holding off after resigning", null);
        scheduleRetry(Duration.ofNanos(left));
        return;
      }
      holdingOff = false;
    }
    if (lease.health() == LeaseKeeper.Health.GONE || lease.health() == LeaseKeeper.Health.CLOSED) {
      transition(CANDIDATE, "waiting for a lease", null);
      return; // leaseGranted pokes us
    }
    if (leaderAbsentSinceNanos < 0) {
      leaderAbsentSinceNanos = now();
    }
    campaign(s, lease.leaseId());
  }

  private void campaign(Snapshot s, long leaseId) {
    long term;
    try {
      term = Terms.next(s.term, s.floor);
    } catch (IllegalArgumentException | ArithmeticException e) {
      // Never wrap around or guess: an exhausted or absurd term space needs an operator.
      log.error("not campaigning: election={} problem=\"{}\"", keys.election(), e.getMessage());
      transition(FOLLOWER, "cannot issue a term: " + e.getMessage(), null);
      scheduleRetry(config.retryBackoffMax());
      return;
    }
    byte[] nonceBytes = new byte[12];
    RANDOM.nextBytes(nonceBytes);
    String nonce = HexFormat.of().formatHex(nonceBytes);
    LeaderRecord rec = new LeaderRecord(candidateId, term, leaseId, nonce, metadata, Instant.now());
    transition(CANDIDATE, "leader key absent: campaigning for term " + term, null);
    opInFlight = true;
    long termModRev = s.termModRevision;
    io.etcd.jetcd.ByteSequence value = io.etcd.jetcd.ByteSequence.from(LeaderRecordCodec.encode(rec));
    etcd.txn(txn -> txn
        .If(new Cmp(bytes(keys.leader()), Cmp.Op.EQUAL, CmpTarget.createRevision(0)),
            new Cmp(bytes(keys.term()), Cmp.Op.EQUAL, CmpTarget.modRevision(termModRev)),
            new Cmp(bytes(keys.termFloor()), Cmp.Op.EQUAL, CmpTarget.modRevision(s.floorModRevision)),
            new Cmp(bytes(keys.paused()), Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
        .Then(Op.put(bytes(keys.leader()), value, PutOption.builder().withLeaseId(leaseId).build()),
            Op.put(bytes(keys.term()), bytes(Long.toString(term)), PutOption.DEFAULT)))
        .whenCompleteAsync((r, e) -> {
          opInFlight = false;
          if (e == null && r.isSucceeded()) {
            won(rec, value, r.getHeader().getRevision(), "campaign won");
          } else if (e == null) {
            dirty = true; // compares failed: someone else moved first; re-read decides
          } else if (EtcdFailure.isDefinite(e)) {
            // etcd answered and rejected it (e.g. NOT_FOUND: our lease is gone): it did not commit and never
            // will, so there is nothing to resolve.
            log.warn("campaign rejected by etcd (not committed): election={} candidate={} term={} lease={} "
                + "error=\"{}\"", keys.election(), candidateId, term, leaseId, EtcdFailure.describe(e));
            scheduleRetry(backoff.next());
          } else {
            // Outcome unknown: the transaction may still commit later. Remember the nonce; a later read
            // that finds our lease + this nonce in the record means we won.
            unresolved.put(nonce, new long[] {leaseId, termModRev});
            log.warn("campaign outcome unknown, will resolve by reading: election={} candidate={} term={} "
                + "lease={} nonce={} error=\"{}\"", keys.election(), candidateId, term, leaseId, nonce,
                LeaseKeeper.describe(e));
            scheduleRetry(backoff.next());
          }
          if (dirty) {
            evaluate();
          }
        }, exec);
  }

  private void won(LeaderRecord rec, io.etcd.jetcd.ByteSequence value, long recordModRevision, String reason) {
    unresolved.clear();
    backoff.reset();
    LeadershipImpl l = new LeadershipImpl(keys.election(), candidateId, rec.term(), rec.leaseId(), rec.nonce(),
        rec.acquiredAt(), recordModRevision, keeper,
        session.listenerExecutor());
    lastTermSeen = Math.max(lastTermSeen, rec.term());
    if (lifecycle.get() != Lifecycle.STARTED) {
      // closed while the campaign was in flight: give it straight back
      recordToDelete = new RecordToDelete(rec.leaseId(), recordModRevision, value, false, new CompletableFuture<>());
      deleteRecord();
      return;
    }
    leadership = l;
    heldRecord = value;
    meters.won.increment();
    if (leaderAbsentSinceNanos >= 0) {
      meters.takeover.record(now() - leaderAbsentSinceNanos, TimeUnit.NANOSECONDS);
      leaderAbsentSinceNanos = -1;
    }
    if (state == LOST) {
      transition(CANDIDATE, "campaigning again", null);
    }
    if (keeper.view().validNow(rec.leaseId())) {
      l.validate();
      transition(LEADER, reason, l);
    } else {
      meters.suspectTransitions.increment();
      transition(SUSPECT, reason + ", but no renewal confirmed recently", l);
      keeperCheckLater();
    }
  }

  /** A SUSPECT that won needs the keeper's next confirmation; re-check after one renew interval too. */
  private void keeperCheckLater() {
    scheduleRetry(config.renewInterval());
  }

  /** Ends the held term voluntarily: invalidate first, then announce, then delete the record. */
  private CompletableFuture<Void> resignNow(LossReason reason, String why, boolean withResignRequest,
      boolean closing) {
    return resignNow(reason, why, withResignRequest, closing, true);
  }

  private CompletableFuture<Void> resignNow(LossReason reason, String why, boolean withResignRequest,
      boolean closing, boolean deleteRecord) {
    LeadershipImpl l = leadership;
    l.invalidate(); // stop work first
    leadership = null;
    transition(closing ? CLOSED : FOLLOWER, why, l);
    l.end(reason);
    meters.lost(reason.name());
    if (!deleteRecord) {
      return CompletableFuture.completedFuture(null);
    }
    RecordToDelete d = new RecordToDelete(l.leaseId(), l.recordModRevision, heldRecord, withResignRequest,
        new CompletableFuture<>());
    recordToDelete = d;
    if (!opInFlight) {
      deleteRecord();
    } else {
      dirty = true;
    }
    return d.done();
  }

  private void releaseIfHeld(LossReason reason, String why) {
    if (leadership != null) {
      resignNow(reason, why, false, false);
    }
  }

  private void loseTerm(LossReason reason, String why) {
    LeadershipImpl l = leadership;
    l.invalidate();
    leadership = null;
    transition(LOST, why, l);
    l.end(reason);
    meters.lost(reason.name());
  }

  private void deleteRecord() {
    RecordToDelete d = recordToDelete;
    opInFlight = true;
    etcd.txn(txn -> {
      List<Op> ops = new ArrayList<>();
      ops.add(Op.delete(bytes(keys.leader()), DeleteOption.DEFAULT));
      if (d.withResignRequest()) {
        ops.add(Op.delete(bytes(keys.resignRequest()), DeleteOption.DEFAULT));
      }
      return txn.If(new Cmp(bytes(keys.leader()), Cmp.Op.EQUAL, CmpTarget.modRevision(d.modRevision())),
              new Cmp(bytes(keys.leader()), Cmp.Op.EQUAL, CmpTarget.value(d.value())))
          .Then(ops.toArray(Op[]::new));
    }).whenCompleteAsync((r, e) -> {
      opInFlight = false;
      if (recordToDelete == d) {
        if (e == null) {
          recordToDelete = null;
          log.info("leader record released: election={} candidate={} lease={} deleted={}", keys.election(),
              candidateId, d.leaseId(), r.isSucceeded() ? "yes" : "no (already gone or replaced)");
          d.done().complete(null);
          dirty = true;
        } else {
          log.warn("deleting leader record failed, retrying: election={} error=\"{}\"", keys.election(),
              LeaseKeeper.describe(e));
          scheduleRetry(backoff.next());
        }
      }
      if (dirty) {
        evaluate();
      }
    }, exec);
  }

  private void deleteStaleResignRequest(KeyValue request) {
    etcd.txn(txn -> txn
        .If(new Cmp(bytes(keys.resignRequest()), Cmp.Op.EQUAL, CmpTarget.modRevision(request.getModRevision())))
        .Then(Op.delete(bytes(keys.resignRequest()), DeleteOption.DEFAULT)));
  }

  private void startHoldOff() {
    holdingOff = true;
    holdOffUntilNanos = now() + config.resignHoldOff().toNanos();
  }

  private void scheduleRetry(Duration delay) {
    if (retryTask != null) {
      retryTask.cancel(false);
    }
    retryTask = session.schedule(this::poke, delay);
  }

  private void transition(LeadershipState to, String reason, LeadershipImpl l) {
    LeadershipState from = state;
    if (from == to) {
      return;
    }
    Transitions.check(from, to);
    state = to;
    long nanos = now();
    Instant wall = Instant.now();
    long term = l != null ? l.term() : 0;
    long lease = l != null ? l.leaseId() : keeper.view().leaseId();
    if (to == LEADER || to == SUSPECT || to == LOST || from == LEADER || from == SUSPECT) {
      log.info("election state change: election={} candidate={} from={} to={} term={} lease={} reason=\"{}\"",
          keys.election(), candidateId, from, to, term, lease, reason);
    } else {
      log.debug("election state change: election={} candidate={} from={} to={} term={} lease={} reason=\"{}\"",
          keys.election(), candidateId, from, to, term, lease, reason);
    }
    ElectionEvent event = new ElectionEvent(keys.election(), candidateId, from, to, term, lease, reason, nanos,
        wall, keeper.view().validUntilNanos(), l);
    for (ListenerEntry e : listeners) {
      e.deliver(event);
    }
    synchronized (monitor) {
      monitor.notifyAll();
    }
  }

  /** The deadline clock (counts host suspend); the scale of event times and validity deadlines. */
  private long now() {
    return keeper.clock().nanoTime();
  }

  private double leaderGauge() {
    LeadershipImpl l = leadership;
    return l != null && l.isValidNow() ? 1 : 0;
  }

  private double termGauge() {
    LeadershipImpl l = leadership;
    return l != null ? l.term() : lastTermSeen;
  }

  private static final class ListenerEntry {
    final ElectionListener listener;
    final SerialExecutor executor;

    ListenerEntry(ElectionListener listener, SerialExecutor executor) {
      this.listener = listener;
      this.executor = executor;
    }

    void deliver(ElectionEvent event) {
      executor.execute(() -> CallbackContext.run(() -> {
        try {
          listener.onStateChange(event);
        } catch (RuntimeException e) {
          log.warn("election listener threw; ignored: election={} listener={}", event.electionName(), listener, e);
        }
      }));
    }
  }

  /** The parsed result of one range read of an election's keys. */
  static final class Snapshot {
    KeyValue leader;
    LeaderRecord record;
    long term;
    long termModRevision;
    long floor;
    long floorModRevision;
    boolean paused;
    KeyValue resignRequest;
    /** {@link ClusterHistory} epoch when the read was sent. */
    long epoch;

    static Snapshot of(ElectionKeys keys, GetResponse resp) {
      Snapshot s = new Snapshot();
      for (KeyValue kv : resp.getKvs()) {
        String key = string(kv.getKey());
        if (key.equals(keys.leader())) {
          s.leader = kv;
          try {
            s.record = LeaderRecordCodec.decode(kv.getValue().getBytes());
          } catch (IllegalArgumentException e) {
            log.warn("leader record unreadable (treated as held by someone else): key={} problem=\"{}\"", key,
                e.getMessage());
          }
        } else if (key.equals(keys.term())) {
          s.term = parse(key, kv);
          s.termModRevision = kv.getModRevision();
        } else if (key.equals(keys.termFloor())) {
          s.floor = parse(key, kv);
          s.floorModRevision = kv.getModRevision();
        } else if (key.equals(keys.paused())) {
          s.paused = true;
        } else if (key.equals(keys.resignRequest())) {
          s.resignRequest = kv;
        }
      }
      return s;
    }

    /** The term a resign request targets; a blank or unparseable value targets whoever leads. */
    long resignRequestTerm(long current) {
      String v = string(resignRequest.getValue()).trim();
      try {
        return v.isEmpty() ? current : Long.parseLong(v);
      } catch (NumberFormatException e) {
        return current;
      }
    }

    private static long parse(String key, KeyValue kv) {
      String v = string(kv.getValue()).trim();
      try {
        long n = Long.parseLong(v);
        if (n < 0) {
          throw new IllegalArgumentException(key + " is negative: " + v);
        }
        return n;
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(key + " is not a decimal number: '" + v + "'");
      }
    }
  }
}
