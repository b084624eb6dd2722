package dev.fenceline.task;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Settings of a {@link LeaderTask}. Every setter validates its value at once and throws
 * {@link IllegalArgumentException} naming the property, the limit and the value; nothing is changed then.
 */
public final class LeaderTaskConfig {
    /** Same rule as election names. */
    static final Pattern ELECTION_NAME = Pattern.compile("[A-Za-z0-9._-]{1,128}");
    /** Same limit as the fencing token's leader id. */
    static final int MAX_CANDIDATE_ID = 200;

    static final Duration MAX_DURATION = Duration.ofHours(1);

    private final @Nullable String electionName;
    private final String candidateId;
    private final Map<String, String> metadata;
    private final Duration interval;
    private final Duration idleInterval;
    private final Duration failureBackoff;
    private final TaskSchedule schedule;
    private final Duration handoverTimeout;
    private final Duration startRetryInterval;
    private final boolean warmUp;
    private final MeterRegistry meterRegistry;

    private LeaderTaskConfig(Builder b) {
        this.electionName = b.electionName;
        this.candidateId = b.candidateId;
        this.metadata = Map.copyOf(b.metadata);
        this.interval = b.interval;
        this.idleInterval = b.idleInterval;
        this.failureBackoff = b.failureBackoff;
        this.schedule = b.schedule;
        this.handoverTimeout = b.handoverTimeout;
        this.startRetryInterval = b.startRetryInterval;
        this.warmUp = b.warmUp;
        this.meterRegistry = b.meterRegistry;
    }

    public static LeaderTaskConfig defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The election to campaign in; null = the resource's name. */
    public @Nullable String electionName() {
        return electionName;
    }

    /** This candidate's id (also the fencing token's leader id); default {@code <host>-<pid>}. */
    public String candidateId() {
        return candidateId;
    }

    /** Written into the leader record (pid, host, version ...). */
    public Map<String, String> metadata() {
        return metadata;
    }

    /**
     * Pause after a run that did work before the next run (default 0: drain a backlog at once); used by the default
     * {@link TaskSchedule#fixedDelay()} only.
     */
    public Duration interval() {
        return interval;
    }

    /**
     * Pause after a run that found nothing to do (default 1 s) under the default {@link TaskSchedule#fixedDelay()},
     * and after a rejected run under either fixed delay (fixed rate and function schedules start afresh in the next
     * term instead).
     */
    public Duration idleInterval() {
        return idleInterval;
    }

    /**
     * Pause after a failed run or a run whose commit outcome is unknown (default 5 s), under every schedule: the run
     * is retried then.
     */
    public Duration failureBackoff() {
        return failureBackoff;
    }

    /** When runs start while leading (default {@link TaskSchedule#fixedDelay()}: interval and idleInterval). */
    public TaskSchedule schedule() {
        return schedule;
    }

    /**
     * How long {@link LeaderTask#close()} lets the current run finish before interrupting it (default 30 s). The
     * term is resigned afterwards either way; a run still inside its transaction is then decided by the fence.
     */
    public Duration handoverTimeout() {
        return handoverTimeout;
    }

    /** Pause between attempts to reach etcd or the database while starting (default 1 s). */
    public Duration startRetryInterval() {
        return startRetryInterval;
    }

    /**
     * Whether to warm up before campaigning (default true): the writer ({@code FencedWriter.warmUp}) and the task's own
     * decision path, so that the first run after winning pays for neither.
     */
    public boolean warmUp() {
        return warmUp;
    }

    /** Where the task's metrics go (default Micrometer's global registry). */
    public MeterRegistry meterRegistry() {
        return meterRegistry;
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.electionName = electionName;
        b.candidateId = candidateId;
        b.metadata.putAll(metadata);
        b.interval = interval;
        b.idleInterval = idleInterval;
        b.failureBackoff = failureBackoff;
        b.schedule = schedule;
        b.handoverTimeout = handoverTimeout;
        b.startRetryInterval = startRetryInterval;
        b.warmUp = warmUp;
        b.meterRegistry = meterRegistry;
        return b;
    }

    @Override
    public String toString() {
        return "LeaderTaskConfig{election=" + electionName + ", candidateId=" + candidateId + ", interval="
                + interval.toMillis() + "ms, idleInterval=" + idleInterval.toMillis() + "ms, failureBackoff="
                + failureBackoff.toMillis() + "ms, schedule=" + schedule + ", handoverTimeout="
                + handoverTimeout.toMillis() + "ms, warmUp="
                + warmUp + "}";
    }

    static String defaultCandidateId() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException | SecurityException e) {
            host = "host";
        }
        String id = host + "-" + ProcessHandle.current().pid();
        return id.length() <= MAX_CANDIDATE_ID ? id : id.substring(id.length() - MAX_CANDIDATE_ID);
    }

    public static final class Builder {
        private @Nullable String electionName;
        private String candidateId = defaultCandidateId();
        private final Map<String, String> metadata = new LinkedHashMap<>();
        private Duration interval = Duration.ZERO;
        private Duration idleInterval = Duration.ofSeconds(1);
        private Duration failureBackoff = Duration.ofSeconds(5);
        private TaskSchedule schedule = TaskSchedule.fixedDelay();
        private Duration handoverTimeout = Duration.ofSeconds(30);
        private Duration startRetryInterval = Duration.ofSeconds(1);
        private boolean warmUp = true;
        private MeterRegistry meterRegistry = Metrics.globalRegistry;

        private Builder() {}

        /**
         * The election to campaign in.
         *
         * @param electionName {@code [A-Za-z0-9._-]{1,128}}, or null for the resource's name
         */
        public Builder electionName(@Nullable String electionName) {
            if (electionName != null && !ELECTION_NAME.matcher(electionName).matches()) {
                throw new IllegalArgumentException(
                        "electionName must be 1 to 128 characters of [A-Za-z0-9._-], was " + quote(electionName));
            }
            this.electionName = electionName;
            return this;
        }

        /**
         * This candidate's id, also the fencing token's leader id.
         *
         * @param candidateId 1 to 200 characters, not blank
         */
        public Builder candidateId(String candidateId) {
            if (candidateId == null || candidateId.isBlank() || candidateId.length() > MAX_CANDIDATE_ID) {
                throw new IllegalArgumentException("candidateId must be 1 to " + MAX_CANDIDATE_ID
                        + " non-blank characters, was "
                        + (candidateId == null ? "null" : candidateId.length() + " characters " + quote(candidateId)));
            }
            this.candidateId = candidateId;
            return this;
        }

        public Builder metadata(Map<String, String> metadata) {
            Objects.requireNonNull(metadata, "metadata");
            metadata.forEach((k, v) -> {
                if (k == null || v == null) {
                    throw new IllegalArgumentException(
                            "metadata must not contain null keys or values, was " + metadata);
                }
            });
            this.metadata.clear();
            this.metadata.putAll(metadata);
            return this;
        }

        public Builder interval(Duration interval) {
            this.interval = checkDuration("interval", interval);
            return this;
        }

        public Builder idleInterval(Duration idleInterval) {
            this.idleInterval = checkDuration("idleInterval", idleInterval);
            return this;
        }

        public Builder failureBackoff(Duration failureBackoff) {
            this.failureBackoff = checkDuration("failureBackoff", failureBackoff);
            return this;
        }

        /**
         * When the runs start.
         *
         * @param schedule not null; see {@link TaskSchedule} for what it does to the pauses above
         */
        public Builder schedule(TaskSchedule schedule) {
            if (schedule == null) {
                throw new IllegalArgumentException(
                        "schedule must not be null (the default is TaskSchedule.fixedDelay())," + " was null");
            }
            this.schedule = schedule;
            return this;
        }

        public Builder handoverTimeout(Duration handoverTimeout) {
            this.handoverTimeout = checkDuration("handoverTimeout", handoverTimeout);
            return this;
        }

        /** Must be at least 10 ms: the start loop must not spin. */
        public Builder startRetryInterval(Duration startRetryInterval) {
            Duration d = checkDuration("startRetryInterval", startRetryInterval);
            if (d.compareTo(Duration.ofMillis(10)) < 0) {
                throw new IllegalArgumentException(
                        "startRetryInterval must be between 10 ms and 1 h, was " + d.toMillis() + " ms");
            }
            this.startRetryInterval = d;
            return this;
        }

        public Builder warmUp(boolean warmUp) {
            this.warmUp = warmUp;
            return this;
        }

        public Builder meterRegistry(MeterRegistry meterRegistry) {
            if (meterRegistry == null) {
                throw new IllegalArgumentException("meterRegistry must not be null (use Metrics.globalRegistry or a"
                        + " SimpleMeterRegistry), was null");
            }
            this.meterRegistry = meterRegistry;
            return this;
        }

        public LeaderTaskConfig build() {
            return new LeaderTaskConfig(this);
        }

        private static Duration checkDuration(String name, Duration d) {
            if (d == null || d.isNegative() || d.compareTo(MAX_DURATION) > 0) {
                throw new IllegalArgumentException(
                        name + " must be between 0 ms and 1 h, was " + (d == null ? "null" : d.toMillis() + " ms"));
            }
            return d;
        }

        private static String quote(String s) {
            return "'" + (s.length() <= 80 ? s : s.substring(0, 77) + "...") + "'";
        }
    }
}
