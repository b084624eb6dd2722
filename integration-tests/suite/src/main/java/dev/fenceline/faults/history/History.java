package dev.fenceline.faults.history;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Everything a run recorded: the workers' own history (attempts, state changes, validity windows), the database's
 * state after draining (batches in commit order, term marks, audit rows, payments), the ids of every payment the
 * inserter created, and the faults that were injected. Pure data; {@link dev.fenceline.faults.check.HistoryChecker}
 * judges it.
 */
public final class History {
    public final long seed;
    public final String resource;
    public final List<BatchAttempt> attempts;
    public final List<CommittedBatch> batchesInCommitOrder;
    public final List<TermMark> termMarks;
    public final List<RejectedWrite> rejectedWrites;
    public final List<Payment> payments;
    public final List<Long> insertedPaymentIds;
    public final List<StateChange> stateChanges;
    public final List<ValidityWindow> validityWindows;
    public final List<FaultRecord> faults;
    /** The run failed over to an asynchronous standby (acknowledged commits before such a failover may be lost). */
    public final boolean asynchronousStandby;
    /** Every write the rogue writer tried (rogueWriter, auditFlood), as the runner recorded it. */
    public final List<RogueAttempt> rogueAttempts;
    /** Rows in the database that only a committed rogue write can have left (must be empty), one description each. */
    public final List<String> rogueRowsCommitted;
    /** The etcd server version the run used (from a member's /version), or "unknown". */
    public final String etcdServerVersion;
    /** Worker processes that ended without the runner asking (each was restarted). */
    public final List<WorkerExit> workerExits;

    private History(Builder b) {
        this.seed = b.seed;
        this.resource = b.resource;
        this.attempts = List.copyOf(b.attempts);
        this.batchesInCommitOrder = List.copyOf(b.batches);
        this.termMarks = List.copyOf(b.termMarks);
        this.rejectedWrites = List.copyOf(b.rejectedWrites);
        this.payments = List.copyOf(b.payments);
        this.insertedPaymentIds = List.copyOf(b.insertedPaymentIds);
        this.stateChanges = List.copyOf(b.stateChanges);
        this.validityWindows = List.copyOf(b.validityWindows);
        this.faults = List.copyOf(b.faults);
        this.asynchronousStandby = b.asynchronousStandby;
        this.rogueAttempts = List.copyOf(b.rogueAttempts);
        this.rogueRowsCommitted = List.copyOf(b.rogueRowsCommitted);
        this.etcdServerVersion = b.etcdServerVersion;
        this.workerExits = List.copyOf(b.workerExits);
    }

    public static Builder builder(long seed) {
        return new Builder(seed);
    }

    public static final class Builder {
        private final long seed;
        private String resource = "settlement";
        private final List<BatchAttempt> attempts = new ArrayList<>();
        private final List<CommittedBatch> batches = new ArrayList<>();
        private final List<TermMark> termMarks = new ArrayList<>();
        private final List<RejectedWrite> rejectedWrites = new ArrayList<>();
        private final List<Payment> payments = new ArrayList<>();
        private final List<Long> insertedPaymentIds = new ArrayList<>();
        private final List<StateChange> stateChanges = new ArrayList<>();
        private final List<ValidityWindow> validityWindows = new ArrayList<>();
        private final List<FaultRecord> faults = new ArrayList<>();
        private boolean asynchronousStandby;
        private final List<RogueAttempt> rogueAttempts = new ArrayList<>();
        private final List<String> rogueRowsCommitted = new ArrayList<>();
        private final List<WorkerExit> workerExits = new ArrayList<>();
        private String etcdServerVersion = "unknown";

        private Builder(long seed) {
            this.seed = seed;
        }

        public Builder resource(String r) {
            this.resource = Objects.requireNonNull(r);
            return this;
        }

        public Builder attempt(BatchAttempt a) {
            attempts.add(a);
            return this;
        }

        public Builder attempts(List<BatchAttempt> a) {
            attempts.addAll(a);
            return this;
        }

        /** Batches must be added in the database's commit order. */
        public Builder committed(CommittedBatch b) {
            batches.add(b);
            return this;
        }

        public Builder committed(List<CommittedBatch> b) {
            batches.addAll(b);
            return this;
        }

        public Builder mark(TermMark m) {
            termMarks.add(m);
            return this;
        }

        public Builder marks(List<TermMark> m) {
            termMarks.addAll(m);
            return this;
        }

        public Builder rejected(RejectedWrite r) {
            rejectedWrites.add(r);
            return this;
        }

        public Builder rejected(List<RejectedWrite> r) {
            rejectedWrites.addAll(r);
            return this;
        }

        public Builder payment(Payment p) {
            payments.add(p);
            return this;
        }

        public Builder payments(List<Payment> p) {
            payments.addAll(p);
            return this;
        }

        public Builder inserted(long paymentId) {
            insertedPaymentIds.add(paymentId);
            return this;
        }

        public Builder inserted(List<Long> ids) {
            insertedPaymentIds.addAll(ids);
            return this;
        }

        public Builder state(StateChange s) {
            stateChanges.add(s);
            return this;
        }

        public Builder states(List<StateChange> s) {
            stateChanges.addAll(s);
            return this;
        }

        public Builder validity(ValidityWindow v) {
            validityWindows.add(v);
            return this;
        }

        public Builder validities(List<ValidityWindow> v) {
            validityWindows.addAll(v);
            return this;
        }

        public Builder fault(FaultRecord f) {
            faults.add(f);
            return this;
        }

        public Builder faults(List<FaultRecord> f) {
            faults.addAll(f);
            return this;
        }

        /** The primary's standby was asynchronous: see {@link History#asynchronousStandby}. */
        public Builder asynchronousStandby(boolean b) {
            asynchronousStandby = b;
            return this;
        }

        public Builder rogue(RogueAttempt a) {
            rogueAttempts.add(a);
            return this;
        }

        public Builder rogue(List<RogueAttempt> a) {
            rogueAttempts.addAll(a);
            return this;
        }

        /** A row found in the database that a committed rogue write left behind. */
        public Builder rogueRowCommitted(String description) {
            rogueRowsCommitted.add(description);
            return this;
        }

        public Builder rogueRowsCommitted(List<String> descriptions) {
            rogueRowsCommitted.addAll(descriptions);
            return this;
        }

        public Builder etcdServerVersion(String v) {
            etcdServerVersion = Objects.requireNonNull(v);
            return this;
        }

        public Builder workerExit(WorkerExit e) {
            workerExits.add(e);
            return this;
        }

        public Builder workerExits(List<WorkerExit> e) {
            workerExits.addAll(e);
            return this;
        }

        public History build() {
            return new History(this);
        }
    }
}
