package dev.fenceline.faults.check;

import dev.fenceline.faults.history.FaultRecord;

/**
 * Measured effect of one injected fault.
 *
 * @param recoveryNs  heal → first committed batch after the heal (-1 if none was seen)
 * @param failoverNs  injection → first committed batch with a term above the mark at injection, before the
 *                    next injection (-1 if none: e.g. a short blip the leader survived)
 * @param committed   batches committed (per the workers' history) between this injection and the next one
 * @param rejected    attempts rejected (stale) between this injection and the next one
 * @param successorNs injection → first worker state LEADER with a term above every term led before the injection
 *                    (and the mark), before the next injection (-1 if none)
 */
public record FaultOutcome(
        FaultRecord fault, long recoveryNs, long failoverNs, int committed, int rejected, long successorNs) {
    public FaultOutcome(FaultRecord fault, long recoveryNs, long failoverNs, int committed, int rejected) {
        this(fault, recoveryNs, failoverNs, committed, rejected, -1);
    }
}
