package dev.fenceline.election.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class ElectionMetricsTest {
    private static final String BUG_GAUGE = "fenceline.election.etcd.lease.revocation.bug";

    @Test
    void anAdminBesideASessionOnTheSameRegistryLeavesTheSessionGaugesToTheSession() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ElectionMetrics session = new ElectionMetrics(registry);
        session.leaseRevocationBugMembers(2);

        ElectionMetrics admin = ElectionMetrics.forAdmin(registry);
        admin.leaseRevocationBugMembers(0);
        admin.request("get");

        assertThat(registry.find(BUG_GAUGE).gauges()).hasSize(1);
        assertThat(registry.get(BUG_GAUGE).gauge().value()).isEqualTo(2.0);
        assertThat(registry.get("fenceline.election.etcd.requests")
                        .tag("op", "get")
                        .counter()
                        .count())
                .isEqualTo(1.0);
    }

    @Test
    void anAdminAloneRegistersNoSessionGauge() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ElectionMetrics.forAdmin(registry);
        assertThat(registry.find(BUG_GAUGE).gauge()).isNull();
        assertThat(registry.getMeters()).noneMatch(m -> m instanceof Gauge);
    }
}
