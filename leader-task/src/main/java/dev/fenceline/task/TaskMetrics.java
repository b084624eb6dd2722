package dev.fenceline.task;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The task's meters, tagged with resource and election: {@code fenceline.task.runs{outcome}},
 * {@code fenceline.task.run.duration{outcome}}, {@code fenceline.task.units}, {@code fenceline.task.resigns},
 * {@code fenceline.task.term.floor.raised}, gauges {@code fenceline.task.leading} (1 while leading with a valid
 * leadership) and {@code fenceline.task.term}.
 */
final class TaskMetrics {
    private final MeterRegistry registry;
    private final List<Meter> meters = new ArrayList<>();
    private final Map<RunOutcome, Counter> runs = new EnumMap<>(RunOutcome.class);
    private final Map<RunOutcome, Timer> durations = new EnumMap<>(RunOutcome.class);
    private final Counter units;
    private final Counter resigns;
    private final Counter floors;

    TaskMetrics(MeterRegistry registry, String resource, String election, LeaderTask task) {
        this.registry = registry;
        Tags tags = Tags.of("resource", resource, "election", election);
        for (RunOutcome o : RunOutcome.values()) {
            runs.put(
                    o,
                    add(Counter.builder("fenceline.task.runs")
                            .tags(tags)
                            .tag("outcome", o.name())
                            .description("Runs of the leader task by outcome")
                            .register(registry)));
            durations.put(
                    o,
                    add(Timer.builder("fenceline.task.run.duration")
                            .tags(tags)
                            .tag("outcome", o.name())
                            .description("Plan plus fenced transaction of one run")
                            .register(registry)));
        }
        units = add(Counter.builder("fenceline.task.units")
                .tags(tags)
                .description("Units of work committed (what TaskWork.run returned)")
                .register(registry));
        resigns = add(Counter.builder("fenceline.task.resigns")
                .tags(tags)
                .description("Terms resigned because PostgreSQL refused them")
                .register(registry));
        floors = add(Counter.builder("fenceline.task.term.floor.raised")
                .tags(tags)
                .description("Times the election's term floor was raised above the database mark")
                .register(registry));
        add(Gauge.builder("fenceline.task.leading", task, t -> t.leadingNow() ? 1 : 0)
                .tags(tags)
                .description("1 while this task leads with a valid leadership")
                .register(registry));
        add(Gauge.builder("fenceline.task.term", task, LeaderTask::termNow)
                .tags(tags)
                .description("The term of the current or last leadership")
                .register(registry));
    }

    private <M extends Meter> M add(M m) {
        meters.add(m);
        return m;
    }

    void run(RunResult r) {
        // the constructor registers a counter and a timer for every outcome
        Objects.requireNonNull(runs.get(r.outcome()), "runs meter").increment();
        Objects.requireNonNull(durations.get(r.outcome()), "duration meter").record(r.duration());
        if (r.outcome() == RunOutcome.COMMITTED) {
            units.increment((double) r.units()); // a counter counts in doubles; exact up to 2^53 units
        }
    }

    void resigned() {
        resigns.increment();
    }

    void floorRaised() {
        floors.increment();
    }

    void close() {
        meters.forEach(registry::remove);
    }
}
