package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionException;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the session's lease alive and tells the elections how sure it is.
 *
 * <p><b>Why one request per renewal instead of jetcd's keepAlive stream.</b> (1) jetcd's stream
 * ends for good after one error (measured here: a 3 s quorum blip killed it and the lease expired); a loop
 * we own cannot silently stop. (2) A stream response does not say which request it answers, so the send
 * time of the renewal it confirms is unknown; with one request per call we know exactly which send time a
 * positive TTL confirms, which is what the fail-closed deadline needs. (3) Each call gets a deadline and a
 * failure is visible at once. Cost: one short gRPC stream per renewal on the existing connection (one
 * request per {@code renewInterval} per session, independent of the number of elections). The stream is
 * ours ({@link EtcdGateway#keepAliveOnce}): jetcd's {@code keepAliveOnce} sends its request twice.
 *
 * <p><b>Members.</b> Renewals stick to one member while it answers; a failed renewal is retried at once on
 * the next member, and SUSPECT is reported only when every member failed in one round (or the deadline
 * passed). Failures are counted per member ({@code fenceline.election.lease.keepalive.failures{endpoint}}).
 *
 * <p><b>Deadline.</b> {@code validUntil = sendTime(last confirmed renewal) + min(ttl, etcdTtl) − safetyMargin}
 * (see {@link ValidityDeadline}). Any of: deadline passed, renewal failed, renewal timed out → SUSPECT at once;
 * a later confirmed renewal → HEALTHY again (elections then verify their record before resuming);
 * etcd says "lease not found" → GONE, and a new lease is granted.
 *
 * <p>Threading: everything runs on its own single scheduler thread, so a busy election pool cannot delay the
 * SUSPECT transition; state is published as one immutable {@link View} in a volatile field.
 */
final class LeaseKeeper {
    private static final Logger log = LoggerFactory.getLogger(LeaseKeeper.class);

    enum Health {
        HEALTHY,
        SUSPECT,
        GONE,
        CLOSED
    }

    /** Snapshot published to readers. {@code validUntilNanos} is meaningful only while HEALTHY or SUSPECT. */
    record View(long leaseId, long validUntilNanos, Health health, ElectionClock clock) {
        boolean validNow(long leaseId) {
            return this.leaseId == leaseId
                    && health == Health.HEALTHY
                    && ValidityDeadline.isBefore(clock.nanoTime(), validUntilNanos);
        }
    }

    interface Listener {
        void leaseSuspect(long leaseId, String reason);

        void leaseConfirmed(long leaseId);

        void leaseGone(long leaseId, String reason);

        void leaseGranted(long leaseId);
    }

    private final ElectionConfig config;
    private final EtcdGateway etcd;
    private final ElectionMetrics metrics;
    private final ScheduledExecutorService timer;
    private final Listener listener;
    private final Backoff backoff;
    /** Every deadline is on this clock (counts host suspend; a fake one in tests). */
    private final ElectionClock clock;

    private volatile View view;
    /** Null until first scheduled. */
    private @Nullable ScheduledFuture<?> renewTask;
    /** Null until first scheduled. */
    private @Nullable ScheduledFuture<?> deadlineTask;
    /** The member renewals go to; timer-thread confined. Moves on only when a renewal there fails. */
    private int renewEndpoint;

    LeaseKeeper(
            ElectionConfig config,
            EtcdGateway etcd,
            ElectionMetrics metrics,
            ScheduledExecutorService timer,
            Listener listener) {
        this(config, etcd, metrics, timer, listener, ElectionClock.system());
    }

    LeaseKeeper(
            ElectionConfig config,
            EtcdGateway etcd,
            ElectionMetrics metrics,
            ScheduledExecutorService timer,
            Listener listener,
            ElectionClock clock) {
        this.clock = clock;
        this.view = new View(0, 0, Health.GONE, clock);
        this.config = config;
        this.etcd = etcd;
        this.metrics = metrics;
        this.timer = timer;
        this.listener = listener;
        this.backoff = new Backoff(config.retryBackoffMin(), config.retryBackoffMax());
    }

    View view() {
        return view;
    }

    ElectionClock clock() {
        return clock;
    }

    /**
     * Grants the first lease, retrying until {@code bound}. Blocking; called once from open().
     *
     * @return the grant response's header revision (the watch starts after it)
     */
    long grantInitial(Duration bound) {
        long start = clock.nanoTime();
        Throwable last = null;
        String hint = ""; // from any attempt: the last one may have timed out instead
        EtcdReachability.TlsQuestion tlsQuestion =
                new EtcdReachability.TlsQuestion(config.endpoints(), config.callTimeout());
        Backoff b = new Backoff(Duration.ofMillis(50), Duration.ofMillis(500));
        while (clock.nanoTime() - start < bound.toNanos()) {
            long sent = clock.nanoTime();
            try {
                LeaseGrantResponse r = etcd.grant(config.ttl().toSeconds()).get();
                timer.submit(() -> install(r.getID(), sent, r.getTTL())).get();
                return r.getHeader().getRevision();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ElectionException("interrupted while granting the session lease", e);
            } catch (ExecutionException e) {
                last = EtcdFailure.causeOf(e);
                hint = EtcdReachability.transientHint(last).isEmpty() ? hint : EtcdReachability.transientHint(last);
                String tls = tlsQuestion.speakingTls(last);
                if (tls != null) {
                    throw new ElectionException(
                            EtcdReachability.speaksTlsMessage("cannot open election session", tls), last, false);
                }
                if (EtcdReachability.classify(last) == EtcdReachability.Verdict.PERMANENT) {
                    // the endpoint answered so that the same call will fail again (not etcd, TLS, refused): say so now
                    throw new ElectionException(
                            "cannot open election session: etcd at " + config.endpoints()
                                    + (EtcdFailure.isDefinite(last)
                                            ? " refused to grant a lease"
                                                    + (config.username() != null
                                                            ? " to user '" + config.username() + "'"
                                                            : "")
                                            : " cannot be used")
                                    + ": "
                                    + EtcdReachability.notRetried(last),
                            last,
                            false);
                }
            }
            long left = bound.toNanos() - (clock.nanoTime() - start);
            if (left <= 0) {
                break;
            }
            try {
                Thread.sleep(Math.min(
                        TimeUnit.NANOSECONDS.toMillis(left) + 1, b.next().toMillis()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ElectionException("interrupted while granting the session lease", e);
            }
        }
        throw new ElectionException(
                "cannot open election session: no etcd endpoint of " + config.endpoints()
                        + " granted a lease within connectTimeout="
                        + config.connectTimeout().toMillis() + "ms (last error: "
                        + describe(last) + hint + ")",
                last,
                true);
    }

    private void install(long leaseId, long sentNanos, long etcdTtl) {
        if (view.health() == Health.CLOSED) {
            return;
        }
        long deadline = ValidityDeadline.deadlineNanos(sentNanos, etcdTtl, config.ttl(), config.safetyMargin());
        view = new View(leaseId, deadline, Health.HEALTHY, clock);
        backoff.reset();
        log.info(
                "lease granted: lease={} lease_hex={} ttl_s={} valid_for_ms={}",
                leaseId,
                Long.toHexString(leaseId),
                etcdTtl,
                TimeUnit.NANOSECONDS.toMillis(ValidityDeadline.remainingNanos(clock.nanoTime(), deadline)));
        scheduleDeadlineCheck();
        scheduleRenew(config.renewInterval().toNanos());
        listener.leaseGranted(leaseId);
    }

    private void scheduleRenew(long delayNanos) {
        if (renewTask != null) {
            renewTask.cancel(false);
        }
        renewTask = timer.schedule(this::renew, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
    }

    private void scheduleDeadlineCheck() {
        if (deadlineTask != null) {
            deadlineTask.cancel(false);
        }
        View v = view;
        long delay = ValidityDeadline.remainingNanos(clock.nanoTime(), v.validUntilNanos());
        deadlineTask = timer.schedule(this::checkDeadline, delay, TimeUnit.NANOSECONDS);
    }

    private void checkDeadline() {
        View v = view;
        if (v.health() == Health.HEALTHY && !ValidityDeadline.isBefore(clock.nanoTime(), v.validUntilNanos())) {
            markSuspect(v.leaseId(), "local deadline passed: no renewal confirmed for ttl - safetyMargin");
        }
    }

    private void renew() {
        View v = view;
        if (v.health() == Health.CLOSED || v.health() == Health.GONE) {
            return;
        }
        sendRenewal(v.leaseId(), renewEndpoint, 1);
    }

    /**
     * One renewal to member {@code endpoint}. {@code attempt} counts the members tried in this round: a failure
     * that is not a definite answer is retried at once on the next member (a stopped member must not cost a
     * renew interval, let alone SUSPECT, while the quorum is intact); only when every member failed in one
     * round does the lease become SUSPECT. Safety never depends on this: the deadline moves only with a
     * confirmed renewal's send time.
     */
    private void sendRenewal(long id, int endpoint, int attempt) {
        long sent = clock.nanoTime();
        // onRenewResult handles a failed renewal itself; the stage it returns adds nothing
        var unused = etcd.keepAliveOnce(id, endpoint)
                .whenCompleteAsync((r, e) -> onRenewResult(id, endpoint, attempt, sent, r, e), timer);
    }

    private void onRenewResult(long id, int endpoint, int attempt, long sent, LeaseKeepAliveResponse r, Throwable e) {
        View v = view;
        if (v.leaseId() != id || v.health() == Health.CLOSED || v.health() == Health.GONE) {
            return;
        }
        long now = clock.nanoTime();
        if (e == null && r.getTTL() > 0) {
            renewEndpoint = endpoint; // stay on a member that answers
            metrics.renewRtt.record(now - sent, TimeUnit.NANOSECONDS);
            long d = ValidityDeadline.deadlineNanos(sent, r.getTTL(), config.ttl(), config.safetyMargin());
            long deadline = ValidityDeadline.later(v.validUntilNanos(), d);
            boolean recovered = v.health() == Health.SUSPECT && ValidityDeadline.isBefore(now, deadline);
            view = new View(id, deadline, recovered ? Health.HEALTHY : v.health(), clock);
            backoff.reset();
            scheduleDeadlineCheck();
            scheduleRenew(config.renewInterval().toNanos() - (now - sent));
            if (recovered) {
                metrics.keepAliveRecoveries.increment();
                log.info(
                        "lease renewal confirmed again: lease={} endpoint={} rtt_ms={} valid_for_ms={}",
                        id,
                        etcd.endpoint(endpoint),
                        TimeUnit.NANOSECONDS.toMillis(now - sent),
                        TimeUnit.NANOSECONDS.toMillis(deadline - now));
                listener.leaseConfirmed(id);
            }
            return;
        }
        if (EtcdFailure.isLeaseNotFound(e) || (e == null && r.getTTL() <= 0)) {
            // A definite answer: etcd no longer has the lease. Not "outcome unknown".
            gone(id, "etcd member " + etcd.endpoint(endpoint) + " reports the lease not found (expired or revoked)");
            return;
        }
        String endpointName = etcd.endpoint(endpoint).uri;
        metrics.keepAliveFailure(endpointName);
        String what = "lease renewal via " + endpointName + " "
                + (EtcdFailure.isLocalTimeout(e) ? "timed out" : "failed") + ": " + EtcdFailure.describe(e);
        int next = endpoint + 1;
        renewEndpoint = Math.floorMod(next, etcd.endpointCount());
        if (attempt < etcd.endpointCount() && ValidityDeadline.isBefore(now, v.validUntilNanos())) {
            log.info("{}; retrying at once on {}", what, etcd.endpoint(next));
            sendRenewal(id, next, attempt + 1);
            return;
        }
        markSuspect(id, what + " (every member tried in this round)");
        scheduleRenew(Math.min(backoff.next().toNanos(), config.renewInterval().toNanos()));
    }

    private void markSuspect(long id, String reason) {
        View v = view;
        if (v.leaseId() != id || v.health() != Health.HEALTHY) {
            return;
        }
        view = new View(id, v.validUntilNanos(), Health.SUSPECT, clock);
        log.warn(
                "lease suspect: lease={} reason=\"{}\" deadline_in_ms={}",
                id,
                reason,
                TimeUnit.NANOSECONDS.toMillis(v.validUntilNanos() - clock.nanoTime()));
        listener.leaseSuspect(id, reason);
    }

    private void gone(long id, String reason) {
        view = new View(id, clock.nanoTime(), Health.GONE, clock);
        log.warn("lease gone: lease={} reason=\"{}\"", id, reason);
        if (deadlineTask != null) {
            deadlineTask.cancel(false);
        }
        listener.leaseGone(id, reason);
        regrant();
    }

    private void regrant() {
        if (view.health() != Health.GONE) {
            return;
        }
        long sent = clock.nanoTime();
        // the callback handles a failed grant itself; the stage it returns adds nothing
        var unused = etcd.grant(config.ttl().toSeconds())
                .whenCompleteAsync(
                        (r, e) -> {
                            if (view.health() != Health.GONE) {
                                return;
                            }
                            if (e == null) {
                                metrics.leaseRegrants.increment();
                                install(r.getID(), sent, r.getTTL());
                            } else {
                                log.warn("lease grant failed, retrying: error=\"{}\"", describe(e));
                                renewTask = timer.schedule(
                                        this::regrant, backoff.next().toNanos(), TimeUnit.NANOSECONDS);
                            }
                        },
                        timer);
    }

    /** Stops renewing. Revocation (if wanted) is the session's job. */
    void close() {
        View v = view;
        view = new View(v.leaseId(), clock.nanoTime(), Health.CLOSED, clock);
        if (renewTask != null) {
            renewTask.cancel(false);
        }
        if (deadlineTask != null) {
            deadlineTask.cancel(false);
        }
    }

    static boolean isLeaseNotFound(Throwable e) {
        return EtcdFailure.isLeaseNotFound(e);
    }

    static Throwable unwrap(Throwable e) {
        return EtcdFailure.unwrap(e);
    }

    static String describe(@Nullable Throwable e) {
        return EtcdFailure.describe(e);
    }
}
