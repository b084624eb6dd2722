package dev.fenceline.spring.scheduled;

import dev.fenceline.task.RunContext;
import dev.fenceline.task.TaskListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.springframework.stereotype.Component;

/** Records when each run's transaction is about to begin, on the monotonic clock, in milliseconds. */
@Component
public class RunStarts implements TaskListener {
    private final List<Long> startsMs = new CopyOnWriteArrayList<>();

    @Override
    public void onRunStarting(RunContext run, Object plan) {
        startsMs.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime()));
    }

    public List<Long> startsMs() {
        return startsMs;
    }
}
