package dev.fenceline.task;

import java.time.Duration;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * One run of a {@link LeaderTask}.
 *
 * @param outcome    how it ended
 * @param term       the term the run carried
 * @param runNumber  counts the task's runs, from 1
 * @param plan       what {@link TaskWork#plan} returned (null when it found nothing or failed)
 * @param units      what {@link TaskWork#run} returned (0 unless COMMITTED)
 * @param duration   plan + transaction, as measured by the task
 * @param error      the exception for REJECTED_STALE, FAILED and COMMIT_UNKNOWN, else null
 * @param finishedAt wall clock at the end (informational)
 */
public record RunResult(
        RunOutcome outcome,
        long term,
        long runNumber,
        @Nullable Object plan,
        long units,
        Duration duration,
        @Nullable Throwable error,
        Instant finishedAt) {}
