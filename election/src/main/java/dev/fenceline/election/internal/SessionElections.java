package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionException;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Holds the elections of one session by name, at most one handle per name, and passes the lease keeper's news on
 * to every one of them.
 */
final class SessionElections {
    private final ConcurrentMap<String, DefaultLeaderElection> byName = new ConcurrentHashMap<>();
    private final LeaseKeeper.Listener leaseNews = new LeaseNews();

    /**
     * Adds the election {@code create} makes under {@code name}. @throws ElectionException if the session already
     * has a handle for {@code name} (then {@code create} is not called)
     */
    DefaultLeaderElection add(String name, Supplier<DefaultLeaderElection> create) {
        DefaultLeaderElection[] created = new DefaultLeaderElection[1];
        byName.compute(name, (k, existing) -> {
            if (existing != null) {
                throw new ElectionException("election '" + name + "' already has a handle in this session");
            }
            created[0] = create.get();
            return created[0];
        });
        return created[0];
    }

    /** The election named {@code name}; null if the session has no handle for it. */
    @Nullable
    DefaultLeaderElection get(String name) {
        return byName.get(name);
    }

    /** Removes {@code e}, and only {@code e}: a newer handle of the same name stays. */
    void remove(DefaultLeaderElection e) {
        byName.remove(e.electionName(), e);
    }

    void forEach(Consumer<DefaultLeaderElection> action) {
        byName.values().forEach(action);
    }

    /** Every election now, unaffected by elections added or removed later. */
    List<DefaultLeaderElection> snapshot() {
        return List.copyOf(byName.values());
    }

    /** The listener the session's {@link LeaseKeeper} reports to. */
    LeaseKeeper.Listener leaseNews() {
        return leaseNews;
    }

    /** The keeper's news, fanned out to the elections; a private class so none of it is callable from outside. */
    private final class LeaseNews implements LeaseKeeper.Listener {
        @Override
        public void leaseSuspect(long leaseId, String reason) {
            forEach(e -> e.onLeaseSuspect(leaseId, reason));
        }

        @Override
        public void leaseConfirmed(long leaseId) {
            forEach(e -> e.onLeaseConfirmed(leaseId));
        }

        @Override
        public void leaseGone(long leaseId, String reason) {
            forEach(e -> e.onLeaseGone(leaseId, reason));
        }

        @Override
        public void leaseGranted(long leaseId) {
            forEach(DefaultLeaderElection::poke);
        }
    }
}
