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

    /** Why it cannot run here (printed in the report next to the skipped kind), or null when it can or no reason is known. */
    default String unavailableReason(FaultEnvironment env) {
        return null;
    }

    Injection inject(FaultEnvironment env, Random rnd) throws Exception;
}
