package dev.fenceline.spring;

import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import dev.fenceline.task.LeaderTask;
import dev.fenceline.task.TaskHealth;
import dev.fenceline.task.TaskPhase;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What {@code /actuator/health/fenceline} reports: for the auto-configured election and for every fenced task, whether this
 * instance is the leader, the term it holds and whether that term is valid right now
 * ({@link Leadership#isValidNow()}). One election or task: its details directly; several: one entry each, by name.
 * Being a follower is healthy; the status is DOWN only when an election was closed, or a task stopped, while the
 * application still runs (it would never lead again).
 *
 * <p>What it shows is this process's belief at the moment of the call; the fence in PostgreSQL is what decides
 * whether a write under that term commits.
 *
 * <p>Free of Spring Boot's health API, which moved between Boot 3 and Boot 4: each starter's
 * {@code FencelineHealthIndicator} hands this report to its own Boot's {@code Health.Builder}.
 */
final class FencelineHealthReport {
    private final List<LeaderElection> elections;
    private final FencedLeaderTasks tasks;

    FencelineHealthReport(List<LeaderElection> elections, FencedLeaderTasks tasks) {
        this.elections = List.copyOf(elections);
        this.tasks = tasks;
    }

    /** The component's status and details, read now. */
    record Snapshot(boolean up, Map<String, Object> details) {}

    Snapshot now() {
        Map<String, Map<String, Object>> entries = new LinkedHashMap<>();
        boolean up = true;
        for (LeaderElection e : elections) {
            entries.put(e.electionName(), details(e));
            up &= e.state() != LeadershipState.CLOSED;
        }
        for (LeaderTask t : tasks.tasks()) {
            TaskHealth h = t.health();
            entries.put(h.resource(), details(h));
            up &= h.up();
        }
        Map<String, Object> details =
                entries.size() == 1 ? entries.values().iterator().next() : new LinkedHashMap<>(entries);
        return new Snapshot(up, details);
    }

    static Map<String, Object> details(LeaderElection election) {
        Optional<Leadership> held = election.leadership();
        boolean valid = held.map(Leadership::isValidNow).orElse(false);
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("election", election.electionName());
        d.put("candidate", election.candidateId());
        d.put("state", election.state().name());
        d.put("leader", election.state() == LeadershipState.LEADER && valid);
        held.ifPresent(l -> d.put("term", l.term()));
        d.put("valid", valid);
        election.observedLeader().ifPresent(r -> d.put("observedLeader", Map.of("id", r.leaderId(), "term", r.term())));
        return d;
    }

    static Map<String, Object> details(TaskHealth h) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("resource", h.resource());
        d.put("election", h.electionName());
        d.put("candidate", h.candidateId());
        d.put("phase", h.phase().name());
        d.put("state", h.electionState().name());
        d.put("leader", h.phase() == TaskPhase.LEADING && h.valid());
        if (h.term() > 0) {
            d.put("term", h.term());
        }
        d.put("valid", h.valid());
        d.put("runsCommitted", h.runsCommitted());
        d.put("runsRejected", h.runsRejected());
        if (h.failure() != null) {
            d.put("failure", h.failure());
        }
        if (h.observedLeader() != null) {
            d.put(
                    "observedLeader",
                    Map.of(
                            "id",
                            h.observedLeader().leaderId(),
                            "term",
                            h.observedLeader().term()));
        }
        if (h.lastRun() != null) {
            d.put(
                    "lastRun",
                    Map.of(
                            "outcome",
                            h.lastRun().outcome().name(),
                            "term",
                            h.lastRun().term()));
        }
        return d;
    }
}
