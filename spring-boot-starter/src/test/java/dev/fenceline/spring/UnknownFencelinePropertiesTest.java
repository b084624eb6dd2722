package dev.fenceline.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.Mockito.mock;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionSession;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.task.TaskExecutionProperties;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.UnboundConfigurationPropertiesException;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A {@code fenceline.*} property that is not Fenceline's fails the start naming it and the closest valid ones, before
 * the known properties are validated. No etcd or PostgreSQL: the session and the DataSource are stand-ins that are
 * never used, so a context that passes the checks starts.
 */
class UnknownFencelinePropertiesTest {
    private static final String ENDPOINT = "fenceline.election.endpoints=http://127.0.0.1:1";

    /** The beans that would connect, replaced (the auto-configuration backs off); the fencing migrations off. */
    @Configuration(proxyBeanMethods = false)
    static class Offline {
        @Bean
        ElectionSession electionSession() {
            return mock(ElectionSession.class);
        }

        @Bean
        FencingDataSource fencingDataSource() {
            return FencingDataSource.shared(mock(DataSource.class));
        }
    }

    private final ApplicationContextRunner autoConfigured = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(FencelineAutoConfiguration.class))
            .withUserConfiguration(Offline.class)
            .withPropertyValues("fenceline.migrations.enabled=false");

    @Test
    void validPropertiesStart() {
        autoConfigured
                .withPropertyValues(
                        ENDPOINT,
                        "fenceline.election.ttl=10s",
                        "fenceline.resource=payments",
                        "fenceline.writer.lock-timeout=1s",
                        "fenceline.datasource.pool-name=own",
                        "fenceline.task.warm-up=false",
                        "fenceline.spring-boot-version-check=true")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(ElectionConfig.class).ttl()).isEqualTo(Duration.ofSeconds(10));
                    assertThat(context.getBean(FencelineProperties.class)
                                    .getTask()
                                    .isWarmUp())
                            .isFalse();
                });
    }

    @Test
    void validPropertiesInTheirOtherSpellingsAndListElementsStart() {
        autoConfigured
                .withPropertyValues(
                        "fenceline.election.endpoints[0]=http://127.0.0.1:1",
                        "fenceline.election.endpoints[1]=http://127.0.0.1:2",
                        "fenceline.election.keyPrefix=/f/",
                        "fenceline.writer.max_payload_bytes=100",
                        "fenceline.task.IDLE-INTERVAL=2s")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    FencelineProperties p = context.getBean(FencelineProperties.class);
                    assertThat(p.getElection().getEndpoints()).hasSize(2);
                    assertThat(p.getElection().getKeyPrefix()).isEqualTo("/f/");
                    assertThat(p.getWriter().getMaxPayloadBytes()).isEqualTo(100);
                    assertThat(p.getTask().getIdleInterval()).isEqualTo(Duration.ofSeconds(2));
                });
    }

    @Test
    void aMisspelledTopLevelPropertyFailsStartUpNamingItAndTheClosestValidOne() {
        autoConfigured
                .withPropertyValues(ENDPOINT, "fenceline.resorce=payments")
                .run(context -> {
                    assertThat(context).hasFailed();
                    UnknownFencelinePropertyException e = unknown(context.getStartupFailure());
                    assertThat(e.getMessage())
                            .startsWith("fenceline.resorce is not a Fenceline property (value 'payments', origin ")
                            .endsWith("; did you mean fenceline.resource?");
                    assertThat(e.unknownProperties()).containsExactly("fenceline.resorce");
                });
    }

    @Test
    void aMisspelledNestedPropertyFailsStartUpNamingIt() {
        autoConfigured
                .withPropertyValues(ENDPOINT, "fenceline.election.ttll=3s")
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(unknown(context.getStartupFailure()).getMessage())
                            .startsWith("fenceline.election.ttll is not a Fenceline property (value '3s', origin ")
                            .endsWith("; did you mean fenceline.election.ttl?");
                });
    }

    @Test
    void aMisspellingIsReportedInsteadOfTheValidationFailureItCauses() {
        // fenceline.election.endpoints stays empty, which validation would report as missing.
        autoConfigured
                .withPropertyValues("fenceline.election.endpoint=http://127.0.0.1:1")
                .run(context -> {
                    assertThat(unknown(context.getStartupFailure()).getMessage())
                            .startsWith("fenceline.election.endpoint is not a Fenceline property")
                            .endsWith("did you mean fenceline.election.endpoints?");
                    assertThat(messages(context.getStartupFailure())).noneMatch(m -> m.contains("must contain"));
                });
    }

    @Test
    void everyUnknownPropertyIsNamedOnALineOfItsOwn() {
        autoConfigured
                .withPropertyValues(
                        ENDPOINT,
                        "fenceline.election.ttll=3s",
                        "fenceline.writer.colour=blue",
                        "fenceline.elektion.name=sample")
                .run(context -> {
                    UnknownFencelinePropertyException e = unknown(context.getStartupFailure());
                    assertThat(e.unknownProperties())
                            .containsExactly(
                                    "fenceline.election.ttll", "fenceline.elektion.name", "fenceline.writer.colour");
                    List<String> lines = e.getMessage().lines().toList();
                    assertThat(lines).hasSize(4);
                    assertThat(lines.get(0)).isEqualTo("3 properties under fenceline are not Fenceline properties:");
                    assertThat(lines.get(1))
                            .startsWith("    fenceline.election.ttll is not a Fenceline property")
                            .endsWith("did you mean fenceline.election.ttl?");
                    assertThat(lines.get(2))
                            .startsWith("    fenceline.elektion.name is not a Fenceline property")
                            .endsWith("did you mean fenceline.election.name?");
                    assertThat(lines.get(3)).startsWith("    fenceline.writer.colour is not a Fenceline property");
                });
    }

    @Test
    void anUnknownPropertyWithNoCloseMatchListsTheValidPropertiesOfItsGroup() {
        autoConfigured
                .withPropertyValues(ENDPOINT, "fenceline.writer.colour=blue")
                .run(context -> assertThat(unknown(context.getStartupFailure()).getMessage())
                        .endsWith("; the properties under fenceline.writer are check-protected-tables,"
                                + " connection-recheck-attempts, idle-in-transaction-session-timeout, lock-timeout,"
                                + " max-payload-bytes"));
        autoConfigured
                .withPropertyValues(ENDPOINT, "fenceline.colour=blue")
                .run(context -> assertThat(unknown(context.getStartupFailure()).getMessage())
                        .endsWith(
                                "; the properties under fenceline are datasource.*, election.*, enabled, migrations.*,"
                                        + " resource, spring-boot-version-check, task.*, writer.*"));
    }

    @Test
    void aPropertyInTheWrongGroupSuggestsTheGroupsThatHaveIt() {
        autoConfigured
                .withPropertyValues(ENDPOINT, "fenceline.election.lock-timeout=1s")
                .run(context -> assertThat(unknown(context.getStartupFailure()).getMessage())
                        .endsWith(
                                "; did you mean fenceline.datasource.lock-timeout or fenceline.writer.lock-timeout?"));
    }

    @Test
    void theValueOfAMisspelledPasswordIsNotRepeated() {
        autoConfigured
                .withPropertyValues(ENDPOINT, "fenceline.datasource.pasword=hunter2")
                .run(context -> {
                    String message = unknown(context.getStartupFailure()).getMessage();
                    assertThat(message)
                            .startsWith("fenceline.datasource.pasword is not a Fenceline property (value not shown")
                            .endsWith("did you mean fenceline.datasource.password?");
                    assertThat(messages(context.getStartupFailure())).noneMatch(m -> m.contains("hunter2"));
                });
    }

    @Test
    void theSpringBootVersionCheckSwitchIsAKnownProperty() {
        autoConfigured
                .withPropertyValues(ENDPOINT, "fenceline.spring-boot-version-check=false")
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void systemPropertiesAndEnvironmentVariablesUnderFencelineAreLeftToTheirOwners() {
        // The test kit reads fenceline.pg.port, fenceline.etcd.bin, ... from system properties in the same JVM.
        autoConfigured
                .withPropertyValues(ENDPOINT)
                .withSystemProperties("fenceline.pg.port=5433")
                .run(context -> assertThat(context).hasNotFailed());
    }

    /** Boot's own, rather than one declared here: a test class would put its metadata first on the classpath. */
    @Configuration(proxyBeanMethods = false)
    @EnableConfigurationProperties(TaskExecutionProperties.class)
    static class Other {}

    @Test
    void otherConfigurationPropertiesKeepTheirOwnRules() {
        autoConfigured
                .withUserConfiguration(Other.class)
                .withPropertyValues(ENDPOINT, "spring.task.execution.no-such-property=1")
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(TaskExecutionProperties.class));
    }

    @Test
    void withFencelineDisabledNoPropertyIsChecked() {
        autoConfigured
                .withPropertyValues("fenceline.enabled=false", "fenceline.election.ttll=3s")
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Configuration(proxyBeanMethods = false)
    @EnableConfigurationProperties(FencelineProperties.class)
    static class BindingOnly {}

    @Test
    void withoutTheAutoConfigurationSpringsOwnCheckStillRejectsAMisspelledNestedProperty() {
        new ApplicationContextRunner()
                .withUserConfiguration(BindingOnly.class)
                .withPropertyValues(ENDPOINT, "fenceline.task.idle-intervall=2s")
                .run(context -> {
                    assertThat(context).hasFailed();
                    Throwable cause = context.getStartupFailure();
                    while (cause != null && !(cause instanceof UnboundConfigurationPropertiesException)) {
                        cause = cause.getCause();
                    }
                    assertThat(cause).isNotNull();
                    assertThat(((UnboundConfigurationPropertiesException) cause).getUnboundProperties())
                            .extracting(p -> p.getName().toString())
                            .containsExactly("fenceline.task.idle-intervall");
                });
    }

    private static UnknownFencelinePropertyException unknown(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof UnknownFencelinePropertyException e) {
                return e;
            }
        }
        throw new AssertionError("no UnknownFencelinePropertyException in " + messages(failure), failure);
    }

    private static List<String> messages(Throwable failure) {
        List<String> messages = new ArrayList<>();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            messages.add(String.valueOf(t.getMessage()));
        }
        return messages;
    }
}
