package dev.fenceline.election;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeoutException;

/**
 * This process's candidacy in one election (Curator LeaderLatch style). Lifecycle: created LATENT by
 * {@link ElectionSession#election}, {@link #start()} exactly once, {@link #close()} any number of times.
 * Misuse fails with exact messages: {@code "start() called twice"}, {@code "start() called after close()"},
 * {@code "resign() called before start()"}.
 *
 * <p>All state changes happen on the session's election threads; read methods are thread-safe and cheap.
 */
public interface LeaderElection extends AutoCloseable {
    String electionName();

    String candidateId();

    /** Begins campaigning. Returns immediately. */
    void start();

    LeadershipState state();

    /** The term this candidate holds (state LEADER or SUSPECT), if any. Check {@link Leadership#isValidNow()}. */
    Optional<Leadership> leadership();

    /**
     * Who leads, as this handle last read the election's keys (no I/O): the leader record — leader id, term, metadata —
     * of whichever candidate holds the election, this one or another; empty when the leader key was absent (or
     * unreadable) at that read, or before the first. Reads follow every change the watch reports, so on a follower this
     * is at most a watch delay old. For display and routing only: it proves nothing ({@link #leadership()} and the
     * fence do).
     */
    Optional<LeaderRecord> observedLeader();

    /**
     * Waits until this candidate is LEADER with a valid deadline.
     *
     * @throws TimeoutException     if not leader within {@code timeout}
     * @throws ElectionException    if the election is or becomes CLOSED while waiting
     */
    Leadership awaitLeadership(Duration timeout) throws InterruptedException, TimeoutException;

    /** Adds a listener called on the session's listener thread. */
    void addListener(ElectionListener listener);

    /** Adds a listener called on {@code executor}, one event at a time, in order. See {@link ElectionListener}. */
    void addListener(ElectionListener listener, Executor executor);

    void removeListener(ElectionListener listener);

    /**
     * Gives up the held term, if any: the leadership stops being valid <em>before</em> anything is sent to
     * etcd, then the record is deleted (compare on its mod revision), so a waiting candidate wins within
     * milliseconds. The candidate stays in the election but does not campaign for
     * {@link ElectionConfig#resignHoldOff()}. The future completes when the record is gone (or was not ours);
     * deletion is retried in the background until then. Without a held term: completes at once. It completes
     * on the session's listener executor.
     */
    CompletableFuture<Void> resign();

    /**
     * Resigns (waiting at most two call timeouts for the delete), stops campaigning, state CLOSED. Idempotent.
     * Called from a listener, from a stage chained onto {@link Leadership#lost()} or {@link #resign()}, or from a
     * session thread, it does not wait (waiting could block the thread that has to finish the close): validity
     * has ended when it returns, the record is deleted in the background. A campaign whose outcome was unknown
     * is resolved by one read, and its record deleted if it committed.
     */
    @Override
    void close();
}
