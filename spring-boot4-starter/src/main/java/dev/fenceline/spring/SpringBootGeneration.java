package dev.fenceline.spring;

import java.util.List;

/**
 * What this artifact, {@code fenceline-spring-boot4-starter}, knows about its Spring Boot generation (Boot 4): the
 * lines it is built and tested on, and the names of Boot's auto-configurations it orders itself after, which Boot 4
 * moved into their own modules (spring-boot-jdbc, spring-boot-micrometer-metrics). The shared sources name Boot's
 * moved classes only through here.
 */
final class SpringBootGeneration {
    /**
     * The Spring Boot lines (major.minor) this artifact is built and tested against: the module's
     * {@code spring-boot.version} (4.0.7). Add a line here only together with a build that runs the module's tests on
     * it.
     */
    static final List<String> SUPPORTED = List.of("4.0");

    static final String ARTIFACT = "fenceline-spring-boot4-starter";

    static final String DATA_SOURCE_AUTO_CONFIGURATION =
            "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration";

    static final String COMPOSITE_METER_REGISTRY_AUTO_CONFIGURATION =
            "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration";

    static final String SIMPLE_METRICS_EXPORT_AUTO_CONFIGURATION =
            "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration";

    private SpringBootGeneration() {}
}
