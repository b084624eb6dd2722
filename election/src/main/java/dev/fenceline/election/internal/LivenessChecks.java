package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionConfig;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks every renew interval that the session still hears etcd without trusting one watch stream.
 *
 * <p>Followers must not depend on one watch stream: a member that hangs (SIGSTOP, a stuck disk, silent packet
 * loss) keeps the TCP connection open and the watch silent, and gRPC keepalive notices only after
 * keepaliveTime + keepaliveTimeout. So, every renew interval:
 * <ol>
 *   <li>every election that does not hold a term re-reads its keys (a linearizable read, with failover to the next
 *       member): a leader whose lease expired is noticed within one interval of the expiry, whatever the watch
 *       does;</li>
 *   <li>the watch gets a progress request; if the previous one got no response within callTimeout, the watch is
 *       re-created at once on the next member (it would only bring the events the reads find anyway, but a live
 *       watch keeps handovers fast).</li>
 * </ol>
 */
final class LivenessChecks {
    /** The session's category: operators filter the session's log lines by it. */
    private static final Logger log = LoggerFactory.getLogger(DefaultElectionSession.class);

    private final ElectionConfig config;
    private final SessionThreads threads;
    private final SessionElections elections;
    private final PrefixWatch watch;
    /** True once the session is closed or crashed. */
    private final BooleanSupplier stopped;

    /** Null until {@link #start()}. */
    private volatile @Nullable ScheduledFuture<?> task;

    LivenessChecks(
            ElectionConfig config,
            SessionThreads threads,
            SessionElections elections,
            PrefixWatch watch,
            BooleanSupplier stopped) {
        this.config = config;
        this.threads = threads;
        this.elections = elections;
        this.watch = watch;
        this.stopped = stopped;
    }

    /** Schedules the checks on the work pool, the first one renew interval from now. */
    void start() {
        long period = config.renewInterval().toNanos();
        task = threads.work.scheduleWithFixedDelay(this::check, period, period, TimeUnit.NANOSECONDS);
    }

    /** Stops further checks; one already running finishes. */
    void stop() {
        ScheduledFuture<?> t = task;
        if (t != null) {
            t.cancel(false);
        }
    }

    private void check() {
        if (stopped.getAsBoolean()) {
            return;
        }
        try {
            elections.forEach(DefaultLeaderElection::pollIfWaiting);
            watch.checkProgress();
        } catch (RuntimeException e) {
            log.warn(
                    "liveness check failed; next one in {} ms",
                    config.renewInterval().toMillis(),
                    e);
        }
    }
}
