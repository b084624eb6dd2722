package dev.fenceline.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.fencing.FencedWriterConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;

/**
 * Binding and validation of {@code fenceline.*}: bad input fails the context at binding time with the library's
 * message, naming the {@code fenceline.} property, the limit and the value; nothing is connected. No etcd or
 * PostgreSQL here: every case fails (or is switched off) before the auto-configuration would reach them.
 */
class FencelinePropertiesTest {
    /** Nothing listens on port 1: reaching it would fail differently (and slowly) than validation. */
    private static final String ENDPOINT = "fenceline.election.endpoints=http://127.0.0.1:1";

    @Configuration(proxyBeanMethods = false)
    @EnableConfigurationProperties(FencelineProperties.class)
    static class BindingOnly {}

    private final ApplicationContextRunner binding =
            new ApplicationContextRunner().withUserConfiguration(BindingOnly.class);

    private final ApplicationContextRunner autoConfigured =
            new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(FencelineAutoConfiguration.class));

    static Stream<Arguments> badInput() {
        return Stream.of(
                Arguments.of(
                        List.of("fenceline.election.ttl=1500ms"),
                        "fenceline.election.ttl must be between 2000ms and 3600000ms but was 1500ms"),
                Arguments.of(
                        List.of("fenceline.election.ttl=2500ms"),
                        "fenceline.election.ttl must be a whole number of seconds (etcd lease TTLs are seconds) but"
                                + " was 2500ms"),
                Arguments.of(
                        List.of("fenceline.election.renew-interval=2s"),
                        "fenceline.election.renew-interval must be greater than 0 and less than ttl/3 (1666ms) but"
                                + " was 2000ms"),
                Arguments.of(
                        List.of("fenceline.election.call-timeout=5ms"),
                        "fenceline.election.call-timeout must be between 10ms and ttl - safetyMargin (4000ms) but"
                                + " was 5ms"),
                Arguments.of(
                        List.of("fenceline.election.key-prefix=fenceline"),
                        "fenceline.election.key-prefix must start and end with '/' (e.g. /fenceline/) but was:"
                                + " 'fenceline'"),
                Arguments.of(
                        List.of("fenceline.election.username=worker"),
                        "fenceline.election.username: credentials need a non-blank username and a password but got"
                                + " username='worker' password=null"),
                Arguments.of(
                        List.of("fenceline.election.name=settle ment"),
                        "fenceline.election.name must match [A-Za-z0-9._-]{1,128}, was: 'settle ment'"),
                Arguments.of(
                        List.of("fenceline.resource=-payments"),
                        "fenceline.resource must be 1 to 63 characters of [A-Za-z0-9._:-] starting with a letter or"
                                + " digit, was '-payments'"),
                Arguments.of(
                        List.of("fenceline.writer.max-payload-bytes=9000"),
                        "fenceline.writer.max-payload-bytes cannot be greater than 8192, was 9000"),
                Arguments.of(
                        List.of("fenceline.writer.connection-recheck-attempts=0"),
                        "fenceline.writer.connection-recheck-attempts must be between 1 and 10, was 0"),
                Arguments.of(
                        List.of("fenceline.writer.lock-timeout=2h"),
                        "fenceline.writer.lock-timeout must be between 1ms and 3600000ms, was 7200000ms"),
                Arguments.of(
                        List.of("fenceline.datasource.url=jdbc:mysql://db/app"),
                        "fenceline.datasource.url: jdbcUrl must start with jdbc:postgresql:, was jdbc:mysql://db/app"),
                Arguments.of(
                        List.of(
                                "fenceline.datasource.url=jdbc:postgresql://db/app",
                                "fenceline.datasource.username=app",
                                "fenceline.datasource.maximum-pool-size=0"),
                        "fenceline.datasource.maximum-pool-size cannot be less than 1, was 0"));
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("badInput")
    void badInputFailsAtBindingNamingTheFencelinePropertyItsLimitAndItsValue(List<String> properties, String message) {
        binding.withPropertyValues(ENDPOINT)
                .withPropertyValues(properties.toArray(String[]::new))
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(messages(context.getStartupFailure())).anyMatch(m -> m.contains(message));
                });
    }

    @Test
    void missingEndpointsFailNamingTheProperty() {
        binding.run(context -> assertThat(messages(context.getStartupFailure()))
                .anyMatch(m -> m.contains(
                        "fenceline.election.endpoints must contain at least one etcd client URL (e.g. http://127.0.0.1:2379)"
                                + " but was empty")));
    }

    @Test
    void anEndpointWithAnotherSchemeFailsNamingTheValue() {
        binding.withPropertyValues("fenceline.election.endpoints=http://127.0.0.1:2379,ftp://127.0.0.1:2380")
                .run(context -> assertThat(messages(context.getStartupFailure()))
                        .anyMatch(m -> m.contains(
                                "fenceline.election.endpoints must be etcd client URLs like http://127.0.0.1:2379 or"
                                        + " https://etcd1:2379 but 'ftp://127.0.0.1:2380' is not: it must start with http://"
                                        + " or https://")));
    }

    @Test
    void theBindingFailureCarriesThePropertyAndItsValueForBootsReport() {
        binding.withPropertyValues(ENDPOINT, "fenceline.election.ttl=1500ms").run(context -> {
            String all = String.join("\n", messages(context.getStartupFailure()));
            assertThat(all).contains("on field 'election.ttl': rejected value [PT1.5S]");
        });
    }

    @Test
    void invalidPropertiesFailTheAutoConfigurationBeforeAnyConnectionToEtcd() {
        autoConfigured
                .withPropertyValues(ENDPOINT, "fenceline.election.ttl=1500ms")
                .run(context -> {
                    assertThat(context).hasFailed();
                    List<String> messages = messages(context.getStartupFailure());
                    assertThat(messages).anyMatch(m -> m.contains("fenceline.election.ttl must be between"));
                    assertThat(messages).noneMatch(m -> m.contains("127.0.0.1:1") && m.contains("connect"));
                });
    }

    @Test
    void validPropertiesBuildTheLibraryConfigurationsWithTheLibrarysComputedDefaults() {
        binding.withPropertyValues(
                        "fenceline.election.endpoints=http://127.0.0.1:2379,http://127.0.0.1:2381",
                        "fenceline.election.ttl=10s",
                        "fenceline.election.name=settlement",
                        "fenceline.writer.max-payload-bytes=100")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    FencelineProperties p = context.getBean(FencelineProperties.class);
                    ElectionConfig config = p.electionConfig(null);
                    assertThat(config.endpoints()).containsExactly("http://127.0.0.1:2379", "http://127.0.0.1:2381");
                    assertThat(config.ttl()).isEqualTo(Duration.ofSeconds(10));
                    assertThat(config.renewInterval()).isEqualTo(Duration.ofSeconds(2));
                    assertThat(config.safetyMargin()).isEqualTo(Duration.ofSeconds(2));
                    assertThat(config.callTimeout()).isEqualTo(Duration.ofSeconds(2));
                    assertThat(config.closeOnShutdown()).isFalse();
                    FencedWriterConfig writer = p.fencedWriterConfig();
                    assertThat(writer.maxPayloadBytes()).isEqualTo(100);
                    assertThat(p.resourceOrElectionName()).isEqualTo("settlement");
                });
    }

    @Test
    void disabledFencelineCreatesNothingAndValidatesNothing() {
        autoConfigured
                .withPropertyValues("fenceline.enabled=false", "fenceline.election.ttl=1500ms")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(ElectionSession.class);
                    assertThat(context).doesNotHaveBean(FencelineProperties.class);
                });
    }

    @Test
    void aLibraryMessageThatNamesNoKnownPropertyIsReportedAgainstItsGroup() {
        PropertyNames names = new PropertyNames("fenceline.writer", java.util.Map.of("lockTimeout", "lock-timeout"));
        InvalidFencelinePropertyException e = names.translate(new IllegalArgumentException("something else"));
        assertThat(e.property()).isEqualTo("fenceline.writer");
        assertThat(e.getMessage()).isEqualTo("fenceline.writer: something else");
        assertThat(names.translate(new NullPointerException("lockTimeout")).getMessage())
                .isEqualTo("fenceline.writer.lock-timeout must be set");
    }

    private static List<String> messages(Throwable failure) {
        List<String> messages = new ArrayList<>();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            messages.add(String.valueOf(t.getMessage()));
        }
        return messages;
    }
}
