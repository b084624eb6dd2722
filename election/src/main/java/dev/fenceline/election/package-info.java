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
 *       {@code lastConfirmedRenewalSend + TTL − safetyMargin} on this JVM's monotonic clock. etcd cannot
 *       expire the lease before {@code lastConfirmedRenewalSend + TTL} (the renewal reached etcd after it was
 *       sent), so a deposed leader's validity ends at least {@code safetyMargin} before a successor can
 *       exist, provided clock rates differ by less than the margin.</li>
 *   <li><b>Unknown outcomes are resolved by reading.</b> A campaign whose transaction timed out is decided by
 *       a later linearizable read of the leader record: ours iff lease id and per-campaign nonce match.</li>
 *   <li><b>Resign stops work first.</b> Validity ends locally before the delete is sent.</li>
 * </ol>
 * Listeners and states are hints; the fenced write at the resource is the only arbiter.
 */
package dev.fenceline.election;
