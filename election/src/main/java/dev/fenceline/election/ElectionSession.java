package dev.fenceline.election;

import dev.fenceline.election.internal.DefaultElectionSession;
import java.util.Map;

/**
 * One etcd client and one lease, shared by every {@link LeaderElection} created from it (thousands are fine:
 * keepalive cost grows with sessions, not elections). In the spirit of etcd's {@code concurrency.Session}:
 * the lease is kept alive by an independent {@code LeaseKeeper} loop; unlike etcd's session, when etcd
 * reports the lease gone this session grants a fresh lease and its elections campaign again (each old term
 * ends with {@link LossReason#LEASE_EXPIRED}).
 */
public interface ElectionSession extends AutoCloseable {

    /**
     * Connects and grants the lease. Blocks at most {@link ElectionConfig#connectTimeout()} (plus one call
     * timeout) and then fails with an {@link ElectionException} naming the endpoints and the last error, which
     * {@link ElectionException#isTransient()}. Fails at once, not transient, when an answer shows that waiting cannot
     * help (an endpoint that is not etcd, a TLS failure, etcd refusing the credentials or permissions); the message
     * then says what to check.
     */
    static ElectionSession open(ElectionConfig config) {
        return DefaultElectionSession.open(config);
    }

    /** Same as {@link #election(String, String, Map)} with empty metadata. */
    LeaderElection election(String electionName, String candidateId);

    /**
     * Creates (but does not start) this session's handle for {@code electionName}. At most one handle per
     * election name per session: a second call for the same name throws
     * {@code "election 'x' already has a handle in this session"} until the first is closed.
     *
     * @param electionName {@code [A-Za-z0-9._-]{1,128}}
     * @param candidateId  non-blank, written as {@code leader_id} when this candidate wins
     * @param metadata     written into the leader record (host, pid, version ...)
     */
    LeaderElection election(String electionName, String candidateId, Map<String, String> metadata);

    /** The lease currently shared by this session's elections (changes only if etcd reported it gone). */
    long leaseId();

    ElectionConfig config();

    /**
     * Registers {@code dependent} (typically a task running on this session's elections) to be closed before this
     * session closes its elections and revokes its lease, whoever closes the session: {@link #close()} or the session's
     * shutdown hook ({@link ElectionConfig#closeOnShutdown()}), which the JVM runs concurrently with every other hook.
     * A task can so finish its current run and resign while its term is still valid, whatever order the hooks run in.
     * Dependents are closed one at a time, newest first, on the closing thread; one that throws is logged and the next
     * closed. Returns the action that unregisters it (idempotent), for a dependent closed on its own.
     *
     * @throws ElectionException if the session is already closed
     */
    Runnable closeFirst(AutoCloseable dependent);

    /**
     * Closes the dependents registered with {@link #closeFirst}, then every election (each held term stops being valid
     * first, listeners hear CLOSED), then revokes the
     * lease, which deletes all of this session's leader records in one request so waiting candidates take
     * over at once, then closes the client. Bounded by about three call timeouts. Idempotent. If the revoke
     * fails the records expire with the lease after the TTL.
     */
    @Override
    void close();
}
