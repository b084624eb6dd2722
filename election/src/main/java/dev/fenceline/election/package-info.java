/**
 * Leader election on etcd that fails closed.
 *
 * <h2>Invariants</h2>
 * <ol>
 *   <li><b>Terms come from etcd.</b> A candidate wins only through one transaction: {@code leader} absent
 *       AND {@code term} mod revision unchanged since read AND {@code term-floor} unchanged AND {@code paused}
 *       absent → put the leader record (with the session lease) and {@code term = max(term+1, floor)}.
 *       Hence terms are strictly increasing per election and two candidates can never both win a term.</li>
 *   <li><b>No clock-based takeover.</b> Watches only trigger a linearizable re-read and the CAS; a candidate
 *       never wins because its own timer says the old leader is gone.</li>
 *   <li><b>Fail closed.</b> {@link dev.fenceline.election.Leadership#isValidNow()} is true only before
 *       {@code lastConfirmedRenewalSend + TTL − safetyMargin} on the deadline clock (this JVM's monotonic
 *       clock plus any detected host suspend). A correct etcd cannot expire the lease before
 *       {@code lastConfirmedRenewalSend + TTL} (the renewal reached etcd after it was sent), so a deposed
 *       leader's validity ends at least {@code safetyMargin} before a successor can exist, provided clock rates
 *       differ by less than the margin. <b>Not on every etcd:</b> an etcd leader stalled by a slow disk or CPU
 *       starvation can, on recovering, revoke leases that were renewed through its successor (etcd issue
 *       15247, fixed in 3.4.31 and 3.5.13; Debian's 3.4.23 has it). Then a successor can win before the old
 *       leader's local deadline, and only the fenced write at the resource decides. The session reads every
 *       member's version at open and warns (log + gauge {@code fenceline.election.etcd.lease.revocation.bug}).
 *       Reproduced here by StaleEtcdLeaderRevocationIT: the record went while its holder was LEADER.</li>
 *   <li><b>Lease-loss hold-off (optional defence, {@code leaseLossHoldOff}, off by default).</b> A voluntary end of
 *       a term (resign, resign request, kill switch, close) deletes the record and writes {@code resigned = term}
 *       in one transaction guarded on the record's exact bytes, so the marker exists iff that term was given up.
 *       Rule: a candidate that reads the {@code leader} key absent while {@code term > 0} and {@code resigned != term}
 *       campaigns no earlier than {@code leaseLossHoldOff} after the first time it saw that absence (its clock read
 *       after the response or watch event arrived). Why that suffices: the old leader's deadline is at most
 *       {@code s + ttl − safetyMargin} for its last confirmed renewal sent at {@code s}; etcd confirmed that renewal
 *       before the revocation or expiry committed, which is before anyone can see the key absent; so with
 *       {@code leaseLossHoldOff ≥ ttl} the successor's first write comes after the old deadline plus the margin
 *       (clock rates within the margin, same {@code ttl} on every candidate). A crash costs {@code leaseLossHoldOff}
 *       more failover; a resign costs one linearizable read (the watch's shortcut is skipped, because the marker
 *       arrives as a later event of the same transaction).</li>
 *   <li><b>Unknown outcomes are resolved by reading.</b> A campaign whose transaction timed out is decided by
 *       a later linearizable read of the leader record: ours iff lease id and per-campaign nonce match.</li>
 *   <li><b>Resign stops work first.</b> Validity ends locally before the delete is sent.</li>
 *   <li><b>Terms are bounded.</b> Terms and floors stay within 1 .. {@link dev.fenceline.election.ElectionAdmin#MAX_TERM};
 *       term arithmetic is checked and never wraps.</li>
 * </ol>
 *
 * <h2>Liveness with one etcd member stopped or hung</h2>
 * Calls go to one member at a time and know which: a failed lease renewal is retried at once on the next
 * member (SUSPECT only when every member failed in one round or the deadline passed); elections without a term
 * re-read every renew interval, so a follower notices an expired leader within one interval whatever its watch
 * does; the watch is probed with progress requests and re-created on the next member when one goes unanswered.
 *
 * <h2>TLS and authentication</h2>
 * {@code https://} endpoints need {@code tlsCaFile} (PEM CA bundle); {@code tlsClientCert(cert, key)} adds a
 * client certificate (key in PKCS#8 PEM) for etcd's {@code --client-cert-auth}; {@code credentials(user,
 * password)} uses etcd RBAC, whose role needs readwrite on {@code keyPrefix} as a prefix. {@code open()} fails at
 * once, naming the cause, for bad credentials or a role without that permission; a wrong CA fails it within
 * {@code connectTimeout} with the TLS error as the last error; an expired or not yet valid client certificate fails
 * {@code open()} / {@code connect()} at once naming the file and its dates (the only wall-clock read besides
 * {@code acquired_at}: the server checks it by its wall clock too). Endpoints without a scheme
 * ({@code 127.0.0.1:2379}) mean {@code http://}, as with etcdctl.
 *
 * <h2>Threads</h2>
 * {@code Leadership.lost()} and {@code resign()} complete on the session's listener executor, never on an
 * election thread. {@code close()} called from a listener, from a stage of those futures, or from a session
 * thread does not wait for the record delete.
 * Listeners and states are hints; the fenced write at the resource is the only arbiter.
 */
@NullMarked
package dev.fenceline.election;

import org.jspecify.annotations.NullMarked;
