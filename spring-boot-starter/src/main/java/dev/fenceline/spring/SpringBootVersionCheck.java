package dev.fenceline.spring;

import java.util.List;
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
 * Refuses to start on a Spring Boot version this starter was not built and tested against, unless
 * {@code fenceline.spring-boot-version-check=false}.
 * <p>
 * A condition, on {@link FencelineAutoConfiguration}, only for when it runs: conditions are evaluated before the
 * class's imports and bean methods are read, so on another Boot line, where some of the classes they name moved or
 * changed, this message comes first instead of a class-loading error that says nothing about versions. It never
 * backs the auto-configuration off: it matches or throws. Ordered after {@code @ConditionalOnProperty}, so that
 * {@code fenceline.enabled=false} switches it off with everything else.
 */
final class SpringBootVersionCheck implements ConfigurationCondition {

    /**
     * The Spring Boot lines (major.minor) this starter is built and tested against: the module's
     * {@code spring-boot.version} (3.5.7). Add a line here only together with a build that runs the module's tests on
     * it.
     */
    static final List<String> SUPPORTED = List.of("3.5");

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
        String line = m != null && m.matches() ? m.group(1) + "." + m.group(2) : null;
        if (line != null && SUPPORTED.contains(line)) {
            return;
        }
        String found = bootVersion == null
                ? "a Spring Boot version that SpringBootVersion.getVersion() cannot tell"
                : line == null
                        ? "Spring Boot version '" + bootVersion + "', which is not major.minor[.patch]"
                        : "Spring Boot " + bootVersion;
        String supported = SUPPORTED.stream().map(s -> s + ".x").collect(Collectors.joining(", "));
        throw new IllegalStateException("fenceline-spring-boot-starter is built and tested for Spring Boot "
                + supported + " but the application runs on " + found + ". Run it on Spring Boot " + supported
                + ", or set " + PROPERTY + "=false to start anyway, untested.");
    }
}
