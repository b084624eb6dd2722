package dev.fenceline.spring;

import dev.fenceline.task.TaskSchedule;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.env.PropertyResolver;
import org.springframework.scheduling.support.CronExpression;

/**
 * Reads the {@link TaskSchedule} of a {@link FencedLeaderTask}'s {@code fixedDelay}, {@code fixedRate} or
 * {@code cron} (with {@code zone}) attribute, {@code ${...}} placeholders resolved, and refuses a bad value naming
 * the task, the attribute and the value.
 */
final class FencedTaskSchedule {
    private FencedTaskSchedule() {}

    /**
     * The schedule {@code annotation} asks for, or the default {@link TaskSchedule#fixedDelay()} when it sets none
     * (or there is no annotation).
     *
     * @param task the task's name in messages ({@code bean.method} or the bean's name)
     * @throws IllegalStateException naming the task, the attribute and the value, when more than one is set or a
     *                               value is not what its attribute takes
     */
    static TaskSchedule of(String task, FencedLeaderTask annotation, PropertyResolver environment) {
        if (annotation == null) {
            return TaskSchedule.fixedDelay();
        }
        List<String> set = new ArrayList<>();
        if (!annotation.fixedDelay().isEmpty()) {
            set.add("fixedDelay");
        }
        if (!annotation.fixedRate().isEmpty()) {
            set.add("fixedRate");
        }
        if (!annotation.cron().isEmpty()) {
            set.add("cron");
        }
        if (set.size() > 1) {
            throw new IllegalStateException("fenced task " + task + ": @FencedLeaderTask sets "
                    + String.join(" and ", set) + "; set at most one of fixedDelay, fixedRate and cron");
        }
        if (!annotation.zone().isEmpty() && annotation.cron().isEmpty()) {
            throw new IllegalStateException("fenced task " + task + ": @FencedLeaderTask(zone = \"" + annotation.zone()
                    + "\") is only for a cron schedule, and cron is not set");
        }
        if (set.isEmpty()) {
            return TaskSchedule.fixedDelay();
        }
        return switch (set.get(0)) {
            case "fixedDelay" -> {
                Duration d = duration(task, "fixedDelay", annotation.fixedDelay(), environment);
                yield build(task, "fixedDelay", annotation.fixedDelay(), () -> TaskSchedule.fixedDelay(d));
            }
            case "fixedRate" -> {
                Duration d = duration(task, "fixedRate", annotation.fixedRate(), environment);
                yield build(task, "fixedRate", annotation.fixedRate(), () -> TaskSchedule.fixedRate(d));
            }
            default -> cron(task, annotation, environment);
        };
    }

    private static TaskSchedule cron(String task, FencedLeaderTask annotation, PropertyResolver environment) {
        String expression = resolve(task, "cron", annotation.cron(), environment);
        CronExpression cron;
        try {
            cron = CronExpression.parse(expression);
        } catch (IllegalArgumentException e) {
            throw bad(task, "cron", annotation.cron(), expression, "is not a cron expression (" + e.getMessage() + ")");
        }
        ZoneId zone;
        if (annotation.zone().isEmpty()) {
            zone = ZoneId.systemDefault(); // as Spring's @Scheduled(cron): the server's zone unless one is given
        } else {
            String id = resolve(task, "zone", annotation.zone(), environment);
            try {
                zone = ZoneId.of(id);
            } catch (DateTimeException e) {
                throw bad(task, "zone", annotation.zone(), id, "is not a time zone id (" + e.getMessage() + ")");
            }
        }
        return TaskSchedule.of("cron '" + expression + "' (" + zone + ")", cronNext(cron, zone));
    }

    /**
     * The cron expression's next time after the last run's start: times missed by a run longer than the period are
     * one run at once, as TaskSchedule coalesces them; none (a date that never comes) is no further run.
     */
    static TaskSchedule.NextStart cronNext(CronExpression cron, ZoneId zone) {
        return (lastStart, lastEnd) -> {
            ZonedDateTime next = cron.next(lastStart.atZone(zone));
            return next == null ? null : next.toInstant();
        };
    }

    private static Duration duration(String task, String attribute, String raw, PropertyResolver environment) {
        String value = resolve(task, attribute, raw, environment);
        try {
            return DurationStyle.detectAndParse(value);
        } catch (IllegalArgumentException e) {
            throw bad(task, attribute, raw, value, "is not a duration (ISO-8601 like PT30S, or 30s, 500ms, 5m)");
        }
    }

    private static TaskSchedule build(
            String task, String attribute, String raw, java.util.function.Supplier<TaskSchedule> schedule) {
        try {
            return schedule.get();
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(
                    "fenced task " + task + ": @FencedLeaderTask(" + attribute + " = \"" + raw + "\"): "
                            + e.getMessage(),
                    e);
        }
    }

    private static String resolve(String task, String attribute, String raw, PropertyResolver environment) {
        String value;
        try {
            value = environment.resolveRequiredPlaceholders(raw).strip();
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(
                    "fenced task " + task + ": @FencedLeaderTask(" + attribute + " = \"" + raw + "\"): "
                            + e.getMessage(),
                    e);
        }
        if (value.isEmpty()) {
            throw bad(task, attribute, raw, value, "is empty");
        }
        return value;
    }

    private static IllegalStateException bad(String task, String attribute, String raw, String value, String why) {
        String shown = raw.equals(value) ? "" : " (resolved from \"" + raw + "\")";
        return new IllegalStateException("fenced task " + task + ": @FencedLeaderTask(" + attribute + " = \"" + value
                + "\")" + shown + " " + why);
    }
}
