package dev.fenceline.faults.check;

/**
 * What failovers to an asynchronous standby lost, counted in full (the findings themselves are capped per check):
 * inserted payments missing, batches a worker was told committed missing, audit rows of rejected attempts missing.
 * All zero when the run had no asynchronous standby or lost nothing.
 */
public record AsyncLoss(int payments, int batches, int auditRows) {
    public static final AsyncLoss NONE = new AsyncLoss(0, 0, 0);

    public int total() {
        return payments + batches + auditRows;
    }
}
