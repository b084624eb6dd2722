/**
 * Implementation of {@link dev.fenceline.election}; not API (may change without notice).
 *
 * <h2>Structure</h2>
 * <ul>
 *   <li>{@code DefaultElectionSession}: the {@code EtcdGateway}, one {@code LeaseKeeper}, one {@code PrefixWatch},
 *       its {@code SessionThreads} and {@code SessionElections}; opens them in order and closes them in order
 *       ({@code Dependents} first, then the elections, then the lease).</li>
 *   <li>{@code PrefixWatch}: one watch over the key prefix, re-created on the next member when it fails; events
 *       only trigger re-reads. {@code LivenessChecks}: the checks that do not trust one stream (follower re-reads
 *       every renew interval, watch progress requests with re-creation on the next member).</li>
 *   <li>{@code LeaseKeeper}: the only code that renews the lease; publishes {@code (leaseId, validUntil, health)}
 *       as one immutable view. Runs on its own thread. Retries a failed renewal at once on the next member.</li>
 *   <li>{@code DefaultLeaderElection}: one candidate's API and lifecycle; turns every trigger (start, watch event,
 *       lease news, timer, resign, close) into a task on the election's serial executor.</li>
 *   <li>{@code ElectionStateMachine}: the per-election state machine, confined to that executor: reads through
 *       {@code ElectionStore}, asks {@code ElectionDecision}, carries the decision out with {@code Campaigner}
 *       (the CAS and campaigns in doubt), {@code RecordRelease} (guarded deletes of our record) and
 *       {@code CampaignTiming} (hold-offs and absence times); {@code EtcdOperationSlot} keeps one etcd operation
 *       in flight; {@code StateAnnouncer} logs each state change and tells the listeners.</li>
 *   <li>{@code ElectionDecision}: the decisions as pure functions of (what etcd said, the lease view, the
 *       clock reading); table-tested without etcd.</li>
 *   <li>{@code ElectionStore} / {@code EtcdElectionStore}: the election's domain operations (read, campaign,
 *       guarded deletes); every jetcd transaction of the protocol is built there.</li>
 *   <li>{@code EtcdGateway}: every etcd call, one client per member so each call knows its member; a gRPC
 *       deadline and a future timeout on each; jetcd retries off; renewals as one raw LeaseKeepAlive request
 *       ({@code LeaseKeepAliveCall}). {@code EtcdChannels} opens a member's connections (deadline, keepalive),
 *       {@code EtcdTls} builds the TLS context.</li>
 *   <li>{@code EtcdFailure}: what a failure means by gRPC status (definite rejection vs outcome unknown).</li>
 *   <li>{@code ElectionClock} / {@code SuspendAwareClock}: the deadline clock; counts host suspend.</li>
 *   <li>{@code ClusterHistory}: which etcd history the session talks to and the watch's revision; every response
 *       header is checked so a coordinator rebuilt from nothing resets the revision (watch) and makes all re-read.</li>
 *   <li>Pure, unit-tested pieces: {@code ElectionDecision}, {@code ValidityDeadline}, {@code Terms},
 *       {@code EtcdFailure}, {@code EtcdVersions}, {@code SuspendAwareClock}, {@code Backoff},
 *       {@code LeaderRecordCodec}, {@code Transitions}, {@code ClusterHistory}.</li>
 * </ul>
 *
 * <h2>Invariants the code relies on</h2>
 * <ol>
 *   <li>{@code LeadershipImpl.valid} is set true only on entering LEADER (after a won CAS or a verifying read)
 *       and set false before any transition out of LEADER is announced or any delete is sent.</li>
 *   <li>The validity deadline only moves forward for a lease and only on a renewal etcd confirmed with TTL &gt; 0,
 *       computed from that renewal's send time.</li>
 *   <li>At most one etcd operation per election is in flight ({@code EtcdOperationSlot}); triggers during it
 *       set {@code dirty}.</li>
 *   <li>A pending record deletion always runs before any new decision of that election.</li>
 *   <li>jetcd callbacks never take our locks and we never call jetcd while holding one.</li>
 *   <li>Revisions (watch start, snapshot compares, guarded deletes) are only used within the cluster history
 *       they came from.</li>
 *   <li>Decision code reads no clock: the caller passes one reading of {@code ElectionClock}.</li>
 *   <li>User-visible futures ({@code lost()}, {@code resign()}) complete on the listener executor.</li>
 * </ol>
 */
@NullMarked
package dev.fenceline.election.internal;

import org.jspecify.annotations.NullMarked;
