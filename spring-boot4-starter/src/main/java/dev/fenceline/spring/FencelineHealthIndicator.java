package dev.fenceline.spring;

import dev.fenceline.election.LeaderElection;
import java.util.List;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The {@code fenceline} health component on Spring Boot 4's health API ({@code org.springframework.boot.health.contributor}, module spring-boot-health):
 * what it reports is {@link FencelineHealthReport}'s.
 */
public class FencelineHealthIndicator extends AbstractHealthIndicator {
    private final FencelineHealthReport report;

    public FencelineHealthIndicator(List<LeaderElection> elections, FencedLeaderTasks tasks) {
        super("fenceline health check failed");
        this.report = new FencelineHealthReport(elections, tasks);
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        FencelineHealthReport.Snapshot now = report.now();
        builder.withDetails(now.details());
        builder.status(now.up() ? "UP" : "DOWN");
    }
}
