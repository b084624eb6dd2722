package dev.fenceline.task;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Bad settings fail where they enter, naming property, limit and value, and change nothing. */
class LeaderTaskConfigTest {
    static Stream<Arguments> badInput() {
        return Stream.of(
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.interval(Duration.ofMillis(-5)),
                        "interval must be between 0 ms and 1 h, was -5 ms"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.idleInterval(Duration.ofHours(2)),
                        "idleInterval must be between 0 ms and 1 h, was 7200000 ms"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.failureBackoff(null),
                        "failureBackoff must be between 0 ms and 1 h, was null"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.handoverTimeout(Duration.ofSeconds(-1)),
                        "handoverTimeout must be between 0 ms and 1 h, was -1000 ms"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.startRetryInterval(Duration.ofMillis(1)),
                        "startRetryInterval must be between 10 ms and 1 h, was 1 ms"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.electionName("settle/ment"),
                        "electionName must be 1 to 128 characters of [A-Za-z0-9._-], was 'settle/ment'"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.candidateId(" "),
                        "candidateId must be 1 to 200 non-blank characters, was 1 characters ' '"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.candidateId("x".repeat(201)),
                        "candidateId must be 1 to 200 non-blank characters, was 201 characters"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.meterRegistry(null),
                        "meterRegistry must not be null"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.schedule(null),
                        "schedule must not be null (the default is TaskSchedule.fixedDelay()), was null"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>) b -> b.schedule(TaskSchedule.fixedRate(Duration.ZERO)),
                        "fixedRate must be between 1 ms and 366 days, was 0 ms"),
                Arguments.of(
                        (Consumer<LeaderTaskConfig.Builder>)
                                b -> b.schedule(TaskSchedule.fixedDelay(Duration.ofDays(367))),
                        "fixedDelay must be between 0 ms and 366 days, was 31708800000 ms"));
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("badInput")
    void badSettingsAreRefusedNamingPropertyLimitAndValueAndChangeNothing(
            Consumer<LeaderTaskConfig.Builder> set, String message) {
        LeaderTaskConfig.Builder b = LeaderTaskConfig.builder();
        LeaderTaskConfig before = b.build();
        assertThatThrownBy(() -> set.accept(b))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(message);
        assertThat(b.build().toString()).isEqualTo(before.toString());
    }

    @Test
    void defaultsDrainABacklogAtOnceAndPollIdleWorkEverySecond() {
        LeaderTaskConfig c = LeaderTaskConfig.defaults();
        assertThat(c.interval()).isZero();
        assertThat(c.idleInterval()).isEqualTo(Duration.ofSeconds(1));
        assertThat(c.failureBackoff()).isEqualTo(Duration.ofSeconds(5));
        assertThat(c.handoverTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(c.warmUp()).isTrue();
        assertThat(c.schedule()).isSameAs(TaskSchedule.fixedDelay());
        assertThat(c.toBuilder().build().schedule()).isSameAs(TaskSchedule.fixedDelay());
        assertThat(c.electionName()).isNull();
        assertThat(c.candidateId()).endsWith("-" + ProcessHandle.current().pid());
    }
}
