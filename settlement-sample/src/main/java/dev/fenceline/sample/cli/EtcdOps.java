package dev.fenceline.sample.cli;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionConfig;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.options.LeaseOption;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** etcd access for the operator commands (status, resign, pause, resume). */
final class EtcdOps {
    private EtcdOps() {
    }

    static ElectionConfig config(List<String> endpoints) {
        return ElectionConfig.builder().endpoints(endpoints).connectTimeout(Duration.ofSeconds(5))
                .meterRegistry(new SimpleMeterRegistry()).closeOnShutdown(false).build();
    }

    static ElectionAdmin admin(List<String> endpoints) {
        return ElectionAdmin.connect(config(endpoints));
    }

    /** Seconds left on a lease as etcd sees it (-1 if the lease is gone), or null when it cannot be asked. */
    static Long leaseTtlLeftMillis(List<String> endpoints, long leaseId) {
        try (Client c = Client.builder().endpoints(endpoints.toArray(new String[0])).connectTimeout(Duration.ofSeconds(3)).build()) {
            LeaseTimeToLiveResponse r = c.getLeaseClient().timeToLive(leaseId, LeaseOption.DEFAULT).get(3, TimeUnit.SECONDS);
            return r.getTTL() < 0 ? -1L : r.getTTL() * 1000L;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } catch (Exception e) {
            return null;
        }
    }
}
