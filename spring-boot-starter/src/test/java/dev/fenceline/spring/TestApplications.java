package dev.fenceline.spring;

import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.TestDatabase;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Starts a test application against the testkit's PostgreSQL and etcd, as a user's application would be configured
 * (spring.datasource.*, fenceline.election.endpoints), with health details shown. Shared by the Boot 3 and Boot 4
 * integration tests.
 */
final class TestApplications {
    private TestApplications() {}

    /** {@code more}: further properties as {@code name=value}. */
    static ConfigurableApplicationContext start(
            Class<?> application, TestDatabase db, EtcdCluster etcd, String candidate, String... more) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.datasource.url", db.jdbcUrl());
        p.put("spring.datasource.username", db.user());
        if (db.password() != null) {
            p.put("spring.datasource.password", db.password());
        }
        p.put("fenceline.election.endpoints", etcd.endpointsCsv());
        p.put("fenceline.election.candidate-id", candidate);
        p.put("fenceline.task.idle-interval", "100ms");
        p.put("management.endpoint.health.show-details", "always");
        p.put("spring.main.banner-mode", "off");
        for (String kv : more) {
            int eq = kv.indexOf('=');
            p.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return new SpringApplicationBuilder(application)
                .web(WebApplicationType.NONE)
                .registerShutdownHook(false)
                .properties(p)
                .run();
    }
}
