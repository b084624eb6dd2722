package dev.fenceline.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.fencing.FencedContext;
import dev.fenceline.task.TaskSchedule;
import java.lang.reflect.Method;
import java.time.Instant;
import java.time.ZoneId;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.mock.env.MockEnvironment;
import org.springframework.scheduling.support.CronExpression;

/**
 * The schedule attributes of {@link FencedLeaderTask}: what each value gives, and that a bad one fails naming the task,
 * the attribute and the value (pure logic: no etcd, no PostgreSQL; a scheduled task runs in {@link SampleApplicationIT}).
 */
class FencedTaskScheduleTest {
    static final MockEnvironment ENV = new MockEnvironment()
            .withProperty("task.rate", "2s")
            .withProperty("task.cron", "0 0 2 * * *")
            .withProperty("task.zone", "Europe/Paris")
            .withProperty("task.empty", "");

    @SuppressWarnings("unused")
    static class Tasks {
        @FencedLeaderTask
        long none(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedDelay = "30s")
        long delaySpring(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedDelay = "PT1M")
        long delayIso(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedDelay = "500")
        long delayMillis(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedRate = "${task.rate}")
        long ratePlaceholder(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(cron = "${task.cron}", zone = "${task.zone}")
        long cronZone(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(cron = "@hourly")
        long cronMacro(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedDelay = "1s", fixedRate = "1s")
        long twoSet(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedRate = "1s", cron = "@hourly")
        long rateAndCron(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedRate = "1s", zone = "UTC")
        long zoneWithoutCron(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedDelay = "soon")
        long notADuration(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedDelay = "-5s")
        long negative(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedRate = "0")
        long zeroRate(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(cron = "0 0 25 * * *")
        long badCron(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(cron = "@hourly", zone = "Mars/Olympus")
        long badZone(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedRate = "${task.missing}")
        long unresolved(FencedContext c) {
            return 0;
        }

        @FencedLeaderTask(fixedRate = "${task.empty}")
        long resolvedEmpty(FencedContext c) {
            return 0;
        }
    }

    static FencedLeaderTask annotation(String method) throws NoSuchMethodException {
        Method m = Tasks.class.getDeclaredMethod(method, FencedContext.class);
        return m.getAnnotation(FencedLeaderTask.class);
    }

    static Stream<Arguments> good() {
        return Stream.of(
                Arguments.of("none", "fixedDelay(interval, idleInterval)"),
                Arguments.of("delaySpring", "fixedDelay(PT30S)"),
                Arguments.of("delayIso", "fixedDelay(PT1M)"),
                Arguments.of("delayMillis", "fixedDelay(PT0.5S)"),
                Arguments.of("ratePlaceholder", "fixedRate(PT2S)"),
                Arguments.of("cronZone", "cron '0 0 2 * * *' (Europe/Paris)"),
                Arguments.of("cronMacro", "cron '@hourly' (" + ZoneId.systemDefault() + ")"));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("good")
    void eachAttributeGivesItsSchedule(String method, String schedule) throws Exception {
        assertThat(FencedTaskSchedule.of("bean." + method, annotation(method), ENV))
                .hasToString(schedule);
    }

    @Test
    void noAnnotationIsTheDefaultSchedule() {
        assertThat(FencedTaskSchedule.of("bean", null, ENV)).isSameAs(TaskSchedule.fixedDelay());
    }

    static Stream<Arguments> bad() {
        return Stream.of(
                Arguments.of(
                        "twoSet",
                        "fenced task bean.twoSet: @FencedLeaderTask sets fixedDelay and fixedRate; set"
                                + " at most one of fixedDelay, fixedRate and cron"),
                Arguments.of("rateAndCron", "fenced task bean.rateAndCron: @FencedLeaderTask sets fixedRate and cron"),
                Arguments.of(
                        "zoneWithoutCron",
                        "fenced task bean.zoneWithoutCron: @FencedLeaderTask(zone = \"UTC\") is"
                                + " only for a cron schedule"),
                Arguments.of(
                        "notADuration",
                        "fenced task bean.notADuration: @FencedLeaderTask(fixedDelay = \"soon\") is"
                                + " not a duration"),
                Arguments.of(
                        "negative",
                        "fenced task bean.negative: @FencedLeaderTask(fixedDelay = \"-5s\"): fixedDelay"
                                + " must be between 0 ms and 366 days, was -5000 ms"),
                Arguments.of(
                        "zeroRate",
                        "fenced task bean.zeroRate: @FencedLeaderTask(fixedRate = \"0\"): fixedRate"
                                + " must be between 1 ms and 366 days, was 0 ms"),
                Arguments.of(
                        "badCron",
                        "fenced task bean.badCron: @FencedLeaderTask(cron = \"0 0 25 * * *\") is not a"
                                + " cron expression"),
                Arguments.of(
                        "badZone",
                        "fenced task bean.badZone: @FencedLeaderTask(zone = \"Mars/Olympus\") is not a"
                                + " time zone id"),
                Arguments.of(
                        "unresolved",
                        "fenced task bean.unresolved: @FencedLeaderTask(fixedRate ="
                                + " \"${task.missing}\"): Could not resolve placeholder 'task.missing'"),
                Arguments.of(
                        "resolvedEmpty",
                        "fenced task bean.resolvedEmpty: @FencedLeaderTask(fixedRate = \"\")"
                                + " (resolved from \"${task.empty}\") is empty"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("bad")
    void aBadValueFailsNamingTheTaskTheAttributeAndTheValue(String method, String message) throws Exception {
        FencedLeaderTask a = annotation(method);
        assertThatThrownBy(() -> FencedTaskSchedule.of("bean." + method, a, ENV))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(message);
    }

    @Test
    void aCronScheduleGivesTheExpressionsNextTimeAfterTheLastStartInItsZone() {
        TaskSchedule.NextStart next =
                FencedTaskSchedule.cronNext(CronExpression.parse("0 0 2 * * *"), ZoneId.of("Europe/Paris"));
        Instant wonAt = Instant.parse("2026-12-03T10:00:00Z");
        // 02:00 in Paris is 01:00 UTC in winter
        assertThat(next.next(wonAt, wonAt)).isEqualTo(Instant.parse("2026-12-04T01:00:00Z"));
        Instant started = Instant.parse("2026-12-04T01:00:00.003Z");
        assertThat(next.next(started, started.plusSeconds(40))).isEqualTo(Instant.parse("2026-12-05T01:00:00Z"));
        // a run that ended days later is asked with its start: the missed times are one run at once
        assertThat(next.next(started, started.plusSeconds(3 * 86_400)))
                .isEqualTo(Instant.parse("2026-12-05T01:00:00Z"));
        assertThat(FencedTaskSchedule.cronNext(CronExpression.parse("0 0 0 30 2 *"), ZoneId.of("UTC"))
                        .next(wonAt, wonAt))
                .as("a time that never comes: no further run")
                .isNull();
    }

    static class BadSchedule {
        @FencedLeaderTask(resource = "ledger", fixedRate = "${ledger.rate}")
        long settle(FencedContext ctx) {
            return 0;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class WithBadSchedule {
        @Bean
        static FencedLeaderTasks fencedLeaderTasks() {
            return new FencedLeaderTasks();
        }

        @Bean
        BadSchedule settlement() {
            return new BadSchedule();
        }
    }

    @Test
    void aBadValueFailsStartUpBeforeAnythingConnects() {
        new ApplicationContextRunner()
                .withUserConfiguration(WithBadSchedule.class)
                .withPropertyValues("ledger.rate=fast")
                .run(context -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessage("fenced task settlement.settle: @FencedLeaderTask(fixedRate = \"fast\") (resolved"
                                + " from \"${ledger.rate}\") is not a duration (ISO-8601 like PT30S, or 30s, 500ms,"
                                + " 5m)"));
    }
}
