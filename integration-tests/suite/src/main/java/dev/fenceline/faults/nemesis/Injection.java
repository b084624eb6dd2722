package dev.fenceline.faults.nemesis;

import java.time.Duration;

/** A fault in force: what it hit, how long the runner should leave it in force, and how to heal it. */
public interface Injection {
    String target();

    /** The worker this fault hit (its id), or null when it hit none (etcd members, the pooler, the rogue writer). */
    default String worker() {
        return null;
    }

    /**
     * For a fault that stopped one etcd member: whether it was the Raft leader then (a new Raft leader renews every
     * lease, which may lengthen a succession); null otherwise or when unknown.
     */
    default Boolean raftLeaderStopped() {
        return null;
    }

    /** This injection, recording whether the etcd member it stopped was the Raft leader (null: unknown). */
    default Injection withRaftLeaderStopped(Boolean wasLeader) {
        Injection self = this;
        return new Injection() {
            @Override
            public String target() {
                return self.target();
            }

            @Override
            public String worker() {
                return self.worker();
            }

            @Override
            public Boolean raftLeaderStopped() {
                return wasLeader;
            }

            @Override
            public String note() {
                return self.note();
            }

            @Override
            public Duration hold() {
                return self.hold();
            }

            @Override
            public void heal() throws Exception {
                self.heal();
            }
        };
    }

    /** Extra facts about the injection for the report (e.g. "3 sessions terminated mid-batch"). */
    String note();

    Duration hold();

    void heal() throws Exception;

    /** A fault that hit no worker. */
    static Injection of(String target, String note, Duration hold, HealAction heal) {
        return onWorker(null, target, note, hold, heal);
    }

    /** A fault that hit worker {@code worker} and nothing else: the worker is its target. */
    static Injection onWorker(String worker, String note, Duration hold, HealAction heal) {
        return onWorker(worker, worker, note, hold, heal);
    }

    /** A fault that hit worker {@code worker} (null: none), described by {@code target}. */
    static Injection onWorker(String worker, String target, String note, Duration hold, HealAction heal) {
        return new Injection() {
            @Override
            public String target() {
                return target;
            }

            @Override
            public String worker() {
                return worker;
            }

            @Override
            public String note() {
                return note;
            }

            @Override
            public Duration hold() {
                return hold;
            }

            @Override
            public void heal() throws Exception {
                heal.run();
            }
        };
    }

    @FunctionalInterface
    interface HealAction {
        void run() throws Exception;
    }
}
