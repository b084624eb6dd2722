package dev.fenceline.faults.history;

import java.time.Instant;

/**
 * A worker process that ended without the runner asking (no kill -9 of a fault, no stop): a finding in itself — the
 * sample's workers are meant to run until told to stop. The runner restarts such a worker so the run goes on.
 *
 * @param exitMonoNs   when the runner saw it end (CLOCK_MONOTONIC ns of the runner)
 * @param lastLogLines the end of its log (stdout and stderr) at that moment
 */
public record WorkerExit(String worker, int exitCode, long exitMonoNs, Instant at, String lastLogLines) {}
