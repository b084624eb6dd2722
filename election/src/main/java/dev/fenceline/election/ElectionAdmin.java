package dev.fenceline.election;

import dev.fenceline.election.internal.DefaultElectionAdmin;
import java.util.Optional;

/**
 * Operator actions on elections (CLI, runbooks). Every method makes a bounded number of linearizable etcd
 * calls, each with {@link ElectionConfig#callTimeout()}, and throws {@link ElectionException} on failure.
 * Equivalent etcdctl commands are given in docs/election.md.
 */
public interface ElectionAdmin extends AutoCloseable {
    /**
     * The largest term an election issues or accepts as a floor: 2^53 − 1, so a term stays exact in JSON readers
     * that use doubles (jq, JavaScript) and {@code term + 1} can never overflow. A floor above it would leave
     * the election unable to issue any term.
     */
    long MAX_TERM = (1L << 53) - 1;

    /**
     * Connects; fails within {@link ElectionConfig#connectTimeout()} when no endpoint answers
     * ({@link ElectionException#isTransient()} true), at once when an answer shows that waiting cannot help (false).
     */
    static ElectionAdmin connect(ElectionConfig config) {
        return DefaultElectionAdmin.connect(config);
    }

    /** The current leader record, if a leader key exists (unparseable values are reported as an exception). */
    Optional<LeaderRecord> leader(String election);

    /** Writes the kill switch: the leader resigns, no candidate campaigns until {@link #resume}. */
    void pause(String election);

    /** Deletes the kill switch. */
    void resume(String election);

    boolean isPaused(String election);

    /**
     * Asks the current leader to resign gracefully (writes {@code resign-request} = its term, guarded on the
     * leader record being unchanged). Returns the term asked to resign, or empty when there is no leader.
     */
    Optional<Long> requestResign(String election);

    /**
     * Guarantees that the next term issued is at least {@code term} (raises {@code term-floor}, never lowers it).
     * Returns the floor in force afterwards. The current leader (if any) keeps its term.
     *
     * @throws ElectionException if {@code term} is not in 1 .. {@link #MAX_TERM}
     */
    long ensureTermAtLeast(String election, long term);

    /** The last term issued (the {@code term} key), 0 if none was ever issued. */
    long currentTerm(String election);

    @Override
    void close();
}
