package dev.fenceline.election.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.ToDoubleFunction;

/**
 * Micrometer meters. Session-level (lease, watch, requests) meters carry no election tag because one lease
 * serves all elections; per-election meters carry {@code election=<name>} and {@code candidate=<id>}. Names (Prometheus form in
 * parentheses):
 * <ul>
 *   <li>{@code fenceline.election.leader} (fenceline_election_leader) gauge 1 while LEADER and valid</li>
 *   <li>{@code fenceline.election.term} gauge: held term, else last term seen</li>
 *   <li>{@code fenceline.election.suspect.transitions} counter</li>
 *   <li>{@code fenceline.election.takeover} timer: leader key seen absent → this candidate won</li>
 *   <li>{@code fenceline.election.won} / {@code fenceline.election.lost} counters ({@code reason} tag on lost)</li>
 *   <li>{@code fenceline.election.etcd.lease.revocation.bug} gauge: members running an etcd version whose
 *       leader can revoke live leases after a stall (0 is good)</li>
 *   <li>{@code fenceline.election.lease.renew.rtt} timer (histogram) of confirmed renewals</li>
 *   <li>{@code fenceline.election.lease.keepalive.failures} ({@code endpoint} tag),
 *       {@code fenceline.election.etcd.failures} ({@code op} and {@code endpoint} tags),
 *       {@code ...lease.keepalive.recoveries},
 *       {@code ...lease.regrants}, {@code ...watch.restarts}, {@code ...watch.stalls}, {@code ...etcd.requests} ({@code op} tag)</li>
 * </ul>
 */
final class ElectionMetrics {
    private final MeterRegistry registry;
    final Timer renewRtt;
    private final ConcurrentMap<String, Counter> keepAliveFailures = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Counter> endpointFailures = new ConcurrentHashMap<>();
    final Counter keepAliveRecoveries;
    final Counter leaseRegrants;
    final Counter watchRestarts;
    final Counter watchStalls;
    private final ConcurrentMap<String, Counter> requests = new ConcurrentHashMap<>();
    private final LongAdder requestTotal = new LongAdder();
    private final java.util.concurrent.atomic.AtomicInteger leaseRevocationBugMembers =
            new java.util.concurrent.atomic.AtomicInteger();

    ElectionMetrics(MeterRegistry registry) {
        this(registry, true);
    }

    /**
     * Meters of an {@link DefaultElectionAdmin}: request and failure counters only. The session's gauges describe
     * the session; an admin opened beside it on the same registry (a leader task's term floor) registering them
     * again would be ignored by Micrometer with a warning.
     */
    static ElectionMetrics forAdmin(MeterRegistry registry) {
        return new ElectionMetrics(registry, false);
    }

    private ElectionMetrics(MeterRegistry registry, boolean sessionGauges) {
        this.registry = registry;
        this.renewRtt = Timer.builder("fenceline.election.lease.renew.rtt")
                .description("round trip of confirmed lease renewals")
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofSeconds(10))
                .register(registry);
        this.keepAliveRecoveries = Counter.builder("fenceline.election.lease.keepalive.recoveries")
                .description("first confirmed renewal after a failure (the keepalive loop re-established)")
                .register(registry);
        this.leaseRegrants = Counter.builder("fenceline.election.lease.regrants")
                .description("new leases granted after etcd reported the lease gone")
                .register(registry);
        this.watchRestarts = Counter.builder("fenceline.election.watch.restarts")
                .description("prefix watch re-created after an error")
                .register(registry);
        if (sessionGauges) {
            Gauge.builder(
                            "fenceline.election.etcd.lease.revocation.bug",
                            leaseRevocationBugMembers,
                            Number::doubleValue)
                    .description(
                            "etcd members (seen at open) whose version can revoke live leases after a leader stall; "
                                    + "anything above 0 means a successor may win before this leader's local deadline")
                    .register(registry);
        }
        this.watchStalls = Counter.builder("fenceline.election.watch.stalls")
                .description("prefix watch without a progress response within callTimeout (member hung): re-created "
                        + "on the next member")
                .register(registry);
    }

    /** A renewal sent to {@code endpoint} failed or timed out (tagged so a sick member is visible). */
    void keepAliveFailure(String endpoint) {
        keepAliveFailures
                .computeIfAbsent(
                        endpoint,
                        e -> Counter.builder("fenceline.election.lease.keepalive.failures")
                                .tag("endpoint", e)
                                .description("lease renewals that failed or timed out, by etcd member")
                                .register(registry))
                .increment();
    }

    /** Total failed renewals over all members (tests, diagnostics). */
    double keepAliveFailureCount() {
        return keepAliveFailures.values().stream().mapToDouble(Counter::count).sum();
    }

    /** A call of kind {@code op} to {@code endpoint} failed without a definite answer. */
    void endpointFailure(String op, String endpoint) {
        endpointFailures
                .computeIfAbsent(
                        op + " " + endpoint,
                        k -> Counter.builder("fenceline.election.etcd.failures")
                                .tag("op", op)
                                .tag("endpoint", endpoint)
                                .description("etcd calls without a definite answer (timeout, unavailable), by member")
                                .register(registry))
                .increment();
    }

    void leaseRevocationBugMembers(int n) {
        leaseRevocationBugMembers.set(n);
    }

    void request(String op) {
        requestTotal.increment();
        requests.computeIfAbsent(
                        op,
                        o -> Counter.builder("fenceline.election.etcd.requests")
                                .tag("op", o)
                                .description("etcd requests issued")
                                .register(registry))
                .increment();
    }

    /** Total etcd requests issued by this session (for the benchmark's request rate). */
    long requestCount() {
        return requestTotal.sum();
    }

    PerElection forElection(
            String election,
            String candidate,
            Object owner,
            ToDoubleFunction<Object> isLeader,
            ToDoubleFunction<Object> term) {
        return new PerElection(election, candidate, owner, isLeader, term);
    }

    final class PerElection {
        final Counter suspectTransitions;
        final Timer takeover;
        final Counter won;
        final Counter leaseLossHoldOffs;
        private final String election;
        private final List<Meter> meters = new ArrayList<>();
        private final ConcurrentMap<String, Counter> lost = new ConcurrentHashMap<>();

        private final String candidate;

        private PerElection(
                String election,
                String candidate,
                Object owner,
                ToDoubleFunction<Object> isLeader,
                ToDoubleFunction<Object> term) {
            this.election = election;
            this.candidate = candidate;
            meters.add(Gauge.builder("fenceline.election.leader", owner, isLeader)
                    .tag("election", election)
                    .tag("candidate", candidate)
                    .description("1 while this process is LEADER with a valid deadline")
                    .register(registry));
            meters.add(Gauge.builder("fenceline.election.term", owner, term)
                    .tag("election", election)
                    .tag("candidate", candidate)
                    .description("term held, else the last term seen")
                    .register(registry));
            suspectTransitions = add(Counter.builder("fenceline.election.suspect.transitions")
                    .tag("election", election)
                    .tag("candidate", candidate)
                    .description("LEADER -> SUSPECT transitions")
                    .register(registry));
            takeover = add(Timer.builder("fenceline.election.takeover")
                    .tag("election", election)
                    .tag("candidate", candidate)
                    .description("leader key seen absent -> campaign won")
                    .register(registry));
            won = add(Counter.builder("fenceline.election.won")
                    .tag("election", election)
                    .tag("candidate", candidate)
                    .description("terms won")
                    .register(registry));
            leaseLossHoldOffs = add(Counter.builder("fenceline.election.lease.loss.holdoffs")
                    .tag("election", election)
                    .tag("candidate", candidate)
                    .description("leader records seen gone without a resign marker that this "
                            + "candidate waited out (leaseLossHoldOff) before campaigning")
                    .register(registry));
        }

        private <M extends Meter> M add(M m) {
            meters.add(m);
            return m;
        }

        void lost(String reason) {
            lost.computeIfAbsent(
                            reason,
                            r -> add(Counter.builder("fenceline.election.lost")
                                    .tag("election", election)
                                    .tag("candidate", candidate)
                                    .tag("reason", r)
                                    .description("terms that ended")
                                    .register(registry)))
                    .increment();
        }

        void remove() {
            meters.forEach(registry::remove);
        }
    }
}
