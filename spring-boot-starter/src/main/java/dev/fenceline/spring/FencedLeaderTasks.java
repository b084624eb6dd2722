package dev.fenceline.spring;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.fencing.FencedContext;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.task.LeaderTask;
import dev.fenceline.task.TaskListener;
import dev.fenceline.task.TaskPhase;
import dev.fenceline.task.TaskSchedule;
import dev.fenceline.task.TaskWork;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Turns every {@link TaskWork} bean and every {@link FencedLeaderTask}-annotated method into a {@link LeaderTask},
 * starts them when the context starts and closes them (graceful handover) when it stops.
 *
 * <p>Invariants: tasks start only after every singleton exists (so after the fencing and the application's
 * migrations); they stop in the default lifecycle phase, before the auto-configured election and the session; a
 * task's candidate id is {@code fenceline.election.candidate-id}, so its rejections are audited under the same name as
 * the rest of the application's writes. Every task gets the application's {@link TaskListener} beans, and the schedule
 * its annotation sets ({@link FencedTaskSchedule}).
 */
public class FencedLeaderTasks implements BeanPostProcessor, SmartLifecycle, ApplicationContextAware {
    private static final Logger log = LoggerFactory.getLogger(FencedLeaderTasks.class);

    /** A task found while the beans were created, built when the context starts. */
    private record Found(String name, Object source, FencedLeaderTask annotation, TaskWork<?> work) {}

    private final List<Found> found = new CopyOnWriteArrayList<>();
    private final Map<String, LeaderTask> tasks = Collections.synchronizedMap(new LinkedHashMap<>());
    private ApplicationContext context;
    private ElectionAdmin admin;
    private volatile boolean running;

    @Override
    public void setApplicationContext(ApplicationContext context) {
        this.context = context;
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
        if (bean instanceof TaskWork<?> work) {
            Class<?> type = AopUtils.getTargetClass(bean);
            found.add(new Found(
                    beanName, bean, AnnotatedElementUtils.findMergedAnnotation(type, FencedLeaderTask.class), work));
            return bean;
        }
        Class<?> type = AopUtils.getTargetClass(bean);
        Map<Method, FencedLeaderTask> methods =
                MethodIntrospector.selectMethods(type, (MethodIntrospector.MetadataLookup<FencedLeaderTask>)
                        m -> AnnotatedElementUtils.findMergedAnnotation(m, FencedLeaderTask.class));
        methods.forEach((method, annotation) -> {
            String name = beanName + "." + method.getName();
            found.add(new Found(name, bean, annotation, methodWork(name, bean, method)));
        });
        return bean;
    }

    /** {@code long|int m(FencedContext)} as a {@link TaskWork}; any other signature fails the context at once. */
    static TaskWork<Boolean> methodWork(String name, Object bean, Method method) {
        Class<?> r = method.getReturnType();
        if (method.getParameterCount() != 1
                || method.getParameterTypes()[0] != FencedContext.class
                || (r != long.class && r != int.class && r != Long.class && r != Integer.class)) {
            throw new BeanCreationException(
                    name,
                    "@FencedLeaderTask method " + method.toGenericString()
                            + " must take one FencedContext and return long or int (the units of work done, 0 for none)");
        }
        Method invocable = AopUtils.selectInvocableMethod(method, bean.getClass());
        ReflectionUtils.makeAccessible(invocable);
        return TaskWork.of(ctx -> {
            try {
                Object units = invocable.invoke(bean, ctx);
                return units == null ? 0 : ((Number) units).longValue();
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof Exception cause) {
                    throw cause;
                }
                throw e;
            }
        });
    }

    @Override
    public void start() {
        if (found.isEmpty()) {
            running = true;
            return;
        }
        // every schedule is read first: a bad one fails start-up before anything connects
        List<TaskSchedule> schedules = new ArrayList<>();
        for (Found f : found) {
            schedules.add(FencedTaskSchedule.of(f.name, f.annotation, context.getEnvironment()));
        }
        FencelineProperties properties = context.getBean(FencelineProperties.class);
        ElectionSession session = context.getBean(ElectionSession.class);
        FencedWriter writer = context.getBean(FencedWriter.class);
        MeterRegistry meters = context.getBeanProvider(MeterRegistry.class).getIfUnique();
        ObjectProvider<TaskListener> listeners = context.getBeanProvider(TaskListener.class);
        // The tasks' shared admin (term floors) gets a registry of its own: its client's session-level meters would
        // repeat the session's (same names, no tags) in the application's registry.
        admin = ElectionAdmin.connect(session.config().toBuilder()
                .meterRegistry(new SimpleMeterRegistry())
                .build());
        List<LeaderTask> built = new ArrayList<>();
        try {
            for (int i = 0; i < found.size(); i++) {
                Found f = found.get(i);
                LeaderTask task = build(f, schedules.get(i), properties, session, writer, meters, listeners);
                if (tasks.putIfAbsent(task.resource(), task) != null) {
                    task.close();
                    throw new IllegalStateException("fenced task " + f.name + " uses resource '" + task.resource()
                            + "' of another fenced task; give it its own @FencedLeaderTask(resource = ...)");
                }
                built.add(task);
            }
        } catch (RuntimeException e) {
            built.forEach(LeaderTask::close);
            tasks.clear();
            admin.close();
            throw e;
        }
        built.forEach(LeaderTask::start);
        running = true;
        log.info("fenced tasks started: {}", tasks.keySet());
    }

    private LeaderTask build(
            Found f,
            TaskSchedule schedule,
            FencelineProperties properties,
            ElectionSession session,
            FencedWriter writer,
            MeterRegistry meters,
            ObjectProvider<TaskListener> listeners) {
        String resource = f.annotation != null && !f.annotation.resource().isEmpty()
                ? f.annotation.resource()
                : properties.resourceOrElectionName();
        if (resource == null) {
            throw new InvalidFencelinePropertyException(
                    "fenceline.resource",
                    "fenced task " + f.name
                            + " needs a resource: set fenceline.resource (or fenceline.election.name), or"
                            + " @FencedLeaderTask(resource = ...)",
                    null);
        }
        String election = f.annotation != null && !f.annotation.election().isEmpty()
                ? f.annotation.election()
                : resource.equals(properties.resourceOrElectionName())
                        ? properties.getElection().getName()
                        : null;
        LeaderTask.Builder<?> b;
        try {
            b = LeaderTask.builder(session, writer, resource, f.work)
                    .config(properties.leaderTaskConfig(election, meters).toBuilder()
                            .schedule(schedule)
                            .build())
                    .admin(admin);
        } catch (InvalidFencelinePropertyException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new IllegalStateException("fenced task " + f.name + ": " + e.getMessage(), e);
        }
        listeners.orderedStream().forEach(b::listener);
        b.listener(leadershipEvents(resource, properties));
        try {
            return b.build();
        } catch (RuntimeException e) {
            throw new IllegalStateException(
                    "fenced task " + f.name + " (resource '" + resource + "', election '"
                            + (election != null ? election : resource) + "'): " + e.getMessage(),
                    e);
        }
    }

    /**
     * Leadership granted and revoked as application events ({@link FencedLeadershipGranted},
     * {@link FencedLeadershipRevoked}): granted when the task starts leading a term, revoked when it leaves that term
     * (to campaign again, to stop, or because it failed). SUSPECT, a term held but not provable for a moment, is
     * neither: the term may come back without a new grant.
     */
    private TaskListener leadershipEvents(String resource, FencelineProperties properties) {
        String candidate = properties.getElection().candidateId();
        return new TaskListener() {
            private long leading;

            @Override
            public void onPhaseChange(TaskPhase previous, TaskPhase phase, long term, String reason) {
                boolean holds = phase == TaskPhase.LEADING || phase == TaskPhase.SUSPECT;
                if (leading != 0 && (!holds || (phase == TaskPhase.LEADING && term != leading))) {
                    long ended = leading;
                    leading = 0;
                    context.publishEvent(new FencedLeadershipRevoked(resource, candidate, ended, reason));
                }
                if (phase == TaskPhase.LEADING && leading == 0) {
                    leading = term;
                    context.publishEvent(new FencedLeadershipGranted(resource, candidate, term));
                }
            }
        };
    }

    /** Graceful handover of every task, one after the other (each bounded by fenceline.task.handover-timeout). */
    @Override
    public void stop() {
        running = false;
        List<LeaderTask> all;
        synchronized (tasks) {
            all = new ArrayList<>(tasks.values());
        }
        for (LeaderTask t : all) {
            try {
                t.close();
            } catch (RuntimeException e) {
                log.warn("closing fenced task {} failed: {}", t.resource(), e.toString());
            }
        }
        if (admin != null) {
            admin.close();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** The default phase: stops before the auto-configured election and the session. */
    @Override
    public int getPhase() {
        return SmartLifecycle.DEFAULT_PHASE;
    }

    /** The running tasks, in the order they were found. */
    public List<LeaderTask> tasks() {
        synchronized (tasks) {
            return List.copyOf(tasks.values());
        }
    }

    /** The task of {@code resource}, once the context has started. */
    public Optional<LeaderTask> task(String resource) {
        return Optional.ofNullable(tasks.get(resource));
    }

    /** Whether the application declared any fenced task (known once its beans are created). */
    public boolean declared() {
        return !found.isEmpty();
    }
}
