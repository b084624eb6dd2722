package dev.fenceline.spring;

import dev.fenceline.task.LeaderTaskConfig;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** {@code fenceline.task.*}: settings of every fenced task ({@link FencedLeaderTask}, TaskWork beans). */
public class TaskProperties {
    static final PropertyNames PROPERTIES = PropertyNames.of(
            "fenceline.task",
            List.of("interval", "idleInterval", "failureBackoff", "handoverTimeout", "startRetryInterval"),
            Map.of());

    /** Pause after a run that did work, 0 to 1h (0: drain a backlog at once). */
    private Duration interval = Duration.ZERO;

    /** Pause after a run that found nothing to do, 0 to 1h. */
    private Duration idleInterval = Duration.ofSeconds(1);

    /** Pause after a failed run or one whose commit outcome is unknown, 0 to 1h. */
    private Duration failureBackoff = Duration.ofSeconds(5);

    /** How long closing the context lets the current run finish before interrupting it, 0 to 1h. */
    private Duration handoverTimeout = Duration.ofSeconds(30);

    /** Pause between attempts to reach etcd or PostgreSQL while a task starts, 10ms to 1h. */
    private Duration startRetryInterval = Duration.ofSeconds(1);

    /** Warm the writer up (connections, statements) before campaigning, so the first run after winning is not cold. */
    private boolean warmUp = true;

    /**
     * A fenced task's configuration, built and checked by {@link LeaderTaskConfig.Builder}.
     *
     * @param electionName the task's election, or null for its resource's name
     * @param candidateId  this process's candidate id ({@link ElectionProperties#candidateId()})
     */
    LeaderTaskConfig leaderTaskConfig(String electionName, String candidateId, MeterRegistry meterRegistry) {
        return PROPERTIES.rethrow(() -> {
            LeaderTaskConfig.Builder b = LeaderTaskConfig.builder()
                    .electionName(electionName)
                    .candidateId(candidateId)
                    .metadata(
                            Map.of("pid", Long.toString(ProcessHandle.current().pid())))
                    .interval(interval)
                    .idleInterval(idleInterval)
                    .failureBackoff(failureBackoff)
                    .handoverTimeout(handoverTimeout)
                    .startRetryInterval(startRetryInterval)
                    .warmUp(warmUp);
            if (meterRegistry != null) {
                b.meterRegistry(meterRegistry);
            }
            return b.build();
        });
    }

    public Duration getInterval() {
        return interval;
    }

    public void setInterval(Duration interval) {
        this.interval = interval;
    }

    public Duration getIdleInterval() {
        return idleInterval;
    }

    public void setIdleInterval(Duration idleInterval) {
        this.idleInterval = idleInterval;
    }

    public Duration getFailureBackoff() {
        return failureBackoff;
    }

    public void setFailureBackoff(Duration failureBackoff) {
        this.failureBackoff = failureBackoff;
    }

    public Duration getHandoverTimeout() {
        return handoverTimeout;
    }

    public void setHandoverTimeout(Duration handoverTimeout) {
        this.handoverTimeout = handoverTimeout;
    }

    public Duration getStartRetryInterval() {
        return startRetryInterval;
    }

    public void setStartRetryInterval(Duration startRetryInterval) {
        this.startRetryInterval = startRetryInterval;
    }

    public boolean isWarmUp() {
        return warmUp;
    }

    public void setWarmUp(boolean warmUp) {
        this.warmUp = warmUp;
    }
}
