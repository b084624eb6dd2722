package dev.fenceline.faults.nemesis;

import java.time.Duration;

/** A fault in force: what it hit, how long the runner should leave it in force, and how to heal it. */
public interface Injection {
    String target();

    /** Extra facts about the injection for the report (e.g. "3 sessions terminated mid-batch"). */
    String note();

    Duration hold();

    void heal() throws Exception;

    static Injection of(String target, String note, Duration hold, HealAction heal) {
        return new Injection() {
            @Override
            public String target() {
                return target;
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
