package dev.fenceline.spring;

import dev.fenceline.election.LeaderElection;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Registers {@code fencelineHealthIndicator}, the {@code fenceline} health component, when Spring Boot 4's health module (spring-boot-health, which Actuator brings) is
 * present and {@code management.health.fenceline.enabled} is not false.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnEnabledHealthIndicator("fenceline")
class FencelineHealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "fencelineHealthIndicator")
    FencelineHealthIndicator fencelineHealthIndicator(
            ObjectProvider<LeaderElection> elections, FencedLeaderTasks tasks) {
        return new FencelineHealthIndicator(elections.orderedStream().toList(), tasks);
    }
}
