package dev.fenceline.task;

import dev.fenceline.election.Leadership;

/** What {@link TaskWork#plan} sees: the leadership this run belongs to. */
public interface RunContext {
    /** The fenced resource. */
    String resource();

    /** This task's candidate id, also the fencing token's leader id. */
    String candidateId();

    /** The term the run's transaction will carry. */
    default long term() {
        return leadership().term();
    }

    Leadership leadership();

    /** Counts the runs of this task, from 1. */
    long runNumber();

    /** True when {@link LeaderTask#close()} was called: long plans may give up early. */
    boolean stopRequested();
}
