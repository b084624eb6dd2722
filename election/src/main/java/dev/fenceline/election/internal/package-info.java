/**
 * Implementation of {@link dev.fenceline.election}; not API (may change without notice).
 *
 * <h2>Structure</h2>
 * <ul>
 *   <li>{@code DefaultElectionSession}: one jetcd client, one {@code LeaseKeeper}, one prefix watch, thread pools.</li>
 *   <li>{@code LeaseKeeper}: the only code that renews the lease; publishes {@code (leaseId, validUntil, health)}
 *       as one immutable view. Runs on its own thread.</li>
 *   <li>{@code DefaultLeaderElection}: the per-election state machine, confined to its serial executor.</li>
 *   <li>{@code EtcdGateway}: every etcd call, each with a gRPC deadline and a future timeout; jetcd retries off.</li>
 *   <li>{@code ClusterHistory}: which etcd history the session talks to and the watch's revision; every response
 *       header is checked so a coordinator rebuilt from nothing resets the revision (watch) and makes all re-read.</li>
 *   <li>Pure, unit-tested pieces: {@code ValidityDeadline}, {@code Backoff}, {@code LeaderRecordCodec},
 *       {@code Transitions}, {@code ClusterHistory}.</li>
 * </ul>
 *
 * <h2>Invariants the code relies on</h2>
 * <ol>
 *   <li>{@code LeadershipImpl.valid} is set true only on entering LEADER (after a won CAS or a verifying read)
 *       and set false before any transition out of LEADER is announced or any delete is sent.</li>
 *   <li>The validity deadline only moves forward for a lease and only on a renewal etcd confirmed with TTL &gt; 0,
 *       computed from that renewal's send time.</li>
 *   <li>At most one etcd operation per election is in flight; triggers during it set {@code dirty}.</li>
 *   <li>A pending record deletion always runs before any new decision of that election.</li>
 *   <li>jetcd callbacks never take our locks and we never call jetcd while holding one.</li>
 *   <li>Revisions (watch start, snapshot compares, guarded deletes) are only used within the cluster history
 *       they came from.</li>
 * </ol>
 */
package dev.fenceline.election.internal;
