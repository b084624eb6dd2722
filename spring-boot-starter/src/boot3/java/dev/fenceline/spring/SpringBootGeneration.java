package dev.fenceline.spring;

import java.util.List;

/**
 * What this artifact, {@code fenceline-spring-boot-starter}, knows about its Spring Boot generation (Boot 3): the
 * lines it is built and tested on, and the names of Boot's auto-configurations it orders itself after, which moved in
 * Boot 4. The shared sources name Boot's moved classes only through here.
 */
final class SpringBootGeneration {
    /**
     * The Spring Boot lines (major.minor) this artifact is built and tested against: the module's
     * {@code spring-boot.version} (3.5.7). Add a line here only together with a build that runs the module's tests on
     * it.
     */
    static final List<String> SUPPORTED = List.of("3.5");

    static final String ARTIFACT = "fenceline-spring-boot-starter";

    static final String DATA_SOURCE_AUTO_CONFIGURATION =
            "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration";

    static final String COMPOSITE_METER_REGISTRY_AUTO_CONFIGURATION =
            "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration";

    static final String SIMPLE_METRICS_EXPORT_AUTO_CONFIGURATION =
            "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration";

    private SpringBootGeneration() {}
}
