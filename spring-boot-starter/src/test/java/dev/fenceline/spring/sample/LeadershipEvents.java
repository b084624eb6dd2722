package dev.fenceline.spring.sample;

import dev.fenceline.spring.FencedLeadershipGranted;
import dev.fenceline.spring.FencedLeadershipRevoked;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/** Records the leadership events the starter publishes, in order, as "granted 3" / "revoked 3". */
@Component
public class LeadershipEvents {
    private final List<String> seen = new CopyOnWriteArrayList<>();

    @EventListener
    public void granted(FencedLeadershipGranted e) {
        seen.add("granted " + e.term() + " " + e.resource() + " " + e.candidateId());
    }

    @EventListener
    public void revoked(FencedLeadershipRevoked e) {
        seen.add("revoked " + e.term() + " " + e.resource() + " " + e.candidateId());
    }

    public List<String> seen() {
        return List.copyOf(seen);
    }
}
