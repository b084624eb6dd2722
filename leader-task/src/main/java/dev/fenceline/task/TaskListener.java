package dev.fenceline.task;

/**
 * Told what a {@link LeaderTask} does. Every method is called on the task's own thread, in order, synchronously
 * (so {@link #onRunStarting} happens before the run's transaction begins): keep them quick. Exceptions are logged
 * and otherwise ignored. For the election's own state changes add an
 * {@link dev.fenceline.election.ElectionListener} to {@link LeaderTask#election()}.
 */
public interface TaskListener {
    /** The task moved from {@code previous} to {@code phase}; {@code term} is the term concerned or 0. */
    default void onPhaseChange(TaskPhase previous, TaskPhase phase, long term, String reason) {}

    /** A plan was made and its fenced transaction is about to begin at {@code run.term()}. */
    default void onRunStarting(RunContext run, Object plan) {}

    /** A run ended (every outcome, including NOTHING_TO_DO). */
    default void onRunFinished(RunResult result) {}

    /**
     * The election's term counter was not above the database's mark (etcd rebuilt from nothing, or a term refused by
     * PostgreSQL): the term floor was raised to {@code floor} so the next campaign wins a term PostgreSQL accepts.
     */
    default void onTermFloorRaised(long databaseMark, long electionTerm, long floor) {}
}
