package dev.fenceline.spring;

import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.springframework.boot.SpringBootVersion;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.ConfigurationCondition;
import org.springframework.core.convert.ConversionException;
import org.springframework.core.env.PropertyResolver;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Refuses to start on a Spring Boot version this artifact was not built and tested against, unless
 * {@code fenceline.spring-boot-version-check=false}; on the other Boot generation it names the artifact built for it.
 * <p>
 * A condition, on {@link FencelineAutoConfiguration}, only for when it runs: conditions are evaluated before the
 * class's imports and bean methods are read, so on another Boot line, where some of the classes they name moved or
 * changed, this message comes first instead of a class-loading error that says nothing about versions. It never
 * backs the auto-configuration off: it matches or throws. Ordered after {@code @ConditionalOnProperty}, so that
 * {@code fenceline.enabled=false} switches it off with everything else.
 */
final class SpringBootVersionCheck implements ConfigurationCondition {

    /** The lines this artifact is built and tested against ({@link SpringBootGeneration#SUPPORTED}). */
    static final List<String> SUPPORTED = SpringBootGeneration.SUPPORTED;

    /** The artifact built for each Spring Boot major version, named when the application runs on another one. */
    static final Map<String, String> ARTIFACT_BY_MAJOR =
            Map.of("3", "fenceline-spring-boot-starter", "4", "fenceline-spring-boot4-starter");

    static final String PROPERTY = "fenceline.spring-boot-version-check";

    private static final Pattern MAJOR_MINOR = Pattern.compile("(\\d+)\\.(\\d+)(?:[.-].*)?");

    @Override
    public ConfigurationPhase getConfigurationPhase() {
        return ConfigurationPhase.PARSE_CONFIGURATION;
    }

    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
        check(context.getEnvironment(), SpringBootVersion.getVersion());
        return true;
    }

    /**
     * Throws unless {@code bootVersion} (as {@link SpringBootVersion#getVersion()} reports it: {@code 3.5.7},
     * {@code 3.5.0-RC1}, or null when it cannot tell) is on one of the {@link #SUPPORTED} lines, or the check is
     * switched off in {@code environment}.
     */
    static void check(PropertyResolver environment, String bootVersion) {
        boolean enabled;
        try {
            enabled = environment.getProperty(PROPERTY, Boolean.class, true);
        } catch (ConversionException e) {
            throw new InvalidFencelinePropertyException(
                    PROPERTY, PROPERTY + " must be true or false, was '" + environment.getProperty(PROPERTY) + "'", e);
        }
        if (!enabled) {
            return;
        }
        Matcher m = bootVersion == null ? null : MAJOR_MINOR.matcher(bootVersion);
        String major = m != null && m.matches() ? m.group(1) : null;
        String line = major != null ? major + "." + m.group(2) : null;
        if (line != null && SUPPORTED.contains(line)) {
            return;
        }
        String found = bootVersion == null
                ? "a Spring Boot version that SpringBootVersion.getVersion() cannot tell"
                : line == null
                        ? "Spring Boot version '" + bootVersion + "', which is not major.minor[.patch]"
                        : "Spring Boot " + bootVersion;
        String supported = SUPPORTED.stream().map(s -> s + ".x").collect(Collectors.joining(", "));
        String other = major == null ? null : ARTIFACT_BY_MAJOR.get(major);
        String instead = other == null || other.equals(SpringBootGeneration.ARTIFACT)
                ? "Run it on Spring Boot " + supported
                : "On Spring Boot " + major + " use " + other + " instead";
        throw new IllegalStateException(SpringBootGeneration.ARTIFACT + " is built and tested for Spring Boot "
                + supported + " but the application runs on " + found + ". " + instead + ", or set " + PROPERTY
                + "=false to start anyway, untested.");
    }
}
