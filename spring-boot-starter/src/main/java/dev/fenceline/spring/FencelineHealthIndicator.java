package dev.fenceline.spring;

import dev.fenceline.election.LeaderElection;
import dev.fenceline.election.Leadership;
import dev.fenceline.election.LeadershipState;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * {@code /actuator/health/fenceline}: per election, whether this instance is the leader, the term it holds and
 * whether that term is valid right now ({@link Leadership#isValidNow()}). Being a follower is healthy; the status is
 * DOWN only when an election was closed while the application still runs (it will never lead again).
 *
 * <p>What it shows is this process's belief at the moment of the call; the fence in PostgreSQL is what decides
 * whether a write under that term commits.
 */
public class FencelineHealthIndicator extends AbstractHealthIndicator {
    private final List<LeaderElection> elections;

    public FencelineHealthIndicator(List<LeaderElection> elections) {
        super("fenceline health check failed");
        this.elections = List.copyOf(elections);
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        boolean closed = false;
        if (elections.size() == 1) {
            builder.withDetails(details(elections.get(0)));
        } else {
            for (LeaderElection e : elections) {
                builder.withDetail(e.electionName(), details(e));
            }
        }
        for (LeaderElection e : elections) {
            closed |= e.state() == LeadershipState.CLOSED;
        }
        if (closed) {
            builder.down();
        } else {
            builder.up();
        }
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
        return d;
    }
}
