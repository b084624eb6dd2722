package dev.fenceline.spring;

import dev.fenceline.task.TaskWork;
import java.util.Map;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches when no bean is a {@link TaskWork} or has a {@link FencedLeaderTask} method. With fenced tasks each task
 * holds its own election handle (a session holds one per election), so the starter then creates no
 * {@code LeaderElection} bean of its own.
 */
class NoFencedLeaderTaskCondition extends SpringBootCondition {
    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        ConfigurableListableBeanFactory beans = context.getBeanFactory();
        if (beans == null) {
            return ConditionOutcome.match("no bean factory");
        }
        for (String name : beans.getBeanDefinitionNames()) {
            Class<?> type = beans.getType(name, false);
            if (type == null) {
                continue;
            }
            if (TaskWork.class.isAssignableFrom(type)) {
                return ConditionOutcome.noMatch("TaskWork bean '" + name + "' becomes a fenced task");
            }
            Map<?, ?> methods =
                    MethodIntrospector.selectMethods(type, (MethodIntrospector.MetadataLookup<FencedLeaderTask>)
                            m -> AnnotatedElementUtils.findMergedAnnotation(m, FencedLeaderTask.class));
            if (!methods.isEmpty()) {
                return ConditionOutcome.noMatch("bean '" + name + "' has @FencedLeaderTask methods");
            }
        }
        return ConditionOutcome.match("no fenced task declared");
    }
}
