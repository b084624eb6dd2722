package dev.fenceline.faults.nemesis;

import dev.fenceline.faults.workload.FaultEnvironment;

import java.util.Random;

/** A named, reusable fault. {@link #inject} starts it and returns the handle that heals it. */
public interface Fault {
    String kind();

    /** Whether this fault can run in this environment (e.g. clock jumps need libfaketime). */
    default boolean available(FaultEnvironment env) {
        return true;
    }

    Injection inject(FaultEnvironment env, Random rnd) throws Exception;
}
