package dev.fenceline.task;

/**
 * Where a {@link LeaderTask} is.
 *
 * <pre>
 *   NEW --start()--> STARTING (warm-up, term floor) --> CAMPAIGNING <--> LEADING <--> SUSPECT
 *                                                            any --close()--> STOPPING --> STOPPED
 *   STARTING, LEADING --a failure waiting cannot fix--> STOPPING --> FAILED
 * </pre>
 * Only {@link #LEADING} runs work, and only while the leadership is valid at the start of each run.
 */
public enum TaskPhase {
    /** Built, {@link LeaderTask#start()} not called yet. */
    NEW,
    /** Warming the writer up and raising the election's term floor above the database's mark. */
    STARTING,
    /** Not leader: a candidate or a follower (also right after resigning a term PostgreSQL refused). */
    CAMPAIGNING,
    /** Leader with a valid leadership: runs the work. */
    LEADING,
    /** Holds a term it cannot currently prove (election SUSPECT, or validity ran out): no new runs. */
    SUSPECT,
    /** {@link LeaderTask#close()} was called: the current run finishes, then the term is resigned. */
    STOPPING,
    /** Stopped and resigned. Terminal. */
    STOPPED,
    /**
     * Stopped and resigned because of a failure that waiting cannot fix (the fencing schema missing, a login without
     * the rights the fence needs, a table or resource that is not protected or registered); {@link TaskHealth#failure()}
     * says what and how to fix it. Terminal; health is down.
     */
    FAILED
}
