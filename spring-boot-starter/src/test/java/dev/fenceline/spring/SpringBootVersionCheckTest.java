package dev.fenceline.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.mock.env.MockEnvironment;

/**
 * The starter refuses a Spring Boot version it was not built and tested against, unless
 * {@code fenceline.spring-boot-version-check=false}, and on the other Boot generation names the artifact built for it.
 * The version is passed in, so unsupported ones can be tried on the Boot this module runs on. Shared by the Boot 3 and
 * Boot 4 artifacts: each runs it against its own {@link SpringBootGeneration}.
 */
class SpringBootVersionCheckTest {
    private static final MockEnvironment DEFAULTS = new MockEnvironment();

    @Test
    void theSpringBootVersionInUseIsSupported() {
        String inUse = SpringBootVersion.getVersion();
        assertThatCode(() -> SpringBootVersionCheck.check(DEFAULTS, inUse)).doesNotThrowAnyException();
        assertThat(SpringBootVersionCheck.SUPPORTED).anyMatch(line -> inUse.startsWith(line + "."));
    }

    /** The line this artifact supports: 3.5 for the Boot 3 artifact, 4.0 for the Boot 4 one. */
    private static final String LINE = SpringBootVersionCheck.SUPPORTED.get(0);

    @ParameterizedTest
    @ValueSource(strings = {".0", ".7", ".12", ".0-RC1", ".8-SNAPSHOT"})
    void everyPatchAndPreReleaseOfASupportedLineIsSupported(String patch) {
        assertThatCode(() -> SpringBootVersionCheck.check(DEFAULTS, LINE + patch))
                .doesNotThrowAnyException();
    }

    @Test
    void anUnsupportedLineOfTheSameGenerationFailsNamingItAndTheSupportedOnes() {
        String major = LINE.substring(0, LINE.indexOf('.'));
        assertThatThrownBy(() -> SpringBootVersionCheck.check(DEFAULTS, major + ".99.2"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(SpringBootGeneration.ARTIFACT + " is built and tested for Spring Boot " + LINE
                        + ".x but the application runs on Spring Boot " + major + ".99.2. Run it on Spring Boot "
                        + LINE + ".x, or set fenceline.spring-boot-version-check=false to start anyway, untested.");
    }

    /** The message each artifact gives on the other generation, keyed by the artifact. */
    private static final Map<String, String> ON_THE_OTHER_GENERATION = Map.of(
            "fenceline-spring-boot-starter",
            "fenceline-spring-boot-starter is built and tested for Spring Boot 3.5.x but the application runs on"
                    + " Spring Boot 4.0.7. On Spring Boot 4 use fenceline-spring-boot4-starter instead, or set"
                    + " fenceline.spring-boot-version-check=false to start anyway, untested.",
            "fenceline-spring-boot4-starter",
            "fenceline-spring-boot4-starter is built and tested for Spring Boot 4.0.x but the application runs on"
                    + " Spring Boot 3.5.7. On Spring Boot 3 use fenceline-spring-boot-starter instead, or set"
                    + " fenceline.spring-boot-version-check=false to start anyway, untested.");

    @Test
    void onTheOtherGenerationTheMessageNamesTheArtifactBuiltForIt() {
        String other = LINE.startsWith("3.") ? "4.0.7" : "3.5.7";
        assertThatThrownBy(() -> SpringBootVersionCheck.check(DEFAULTS, other))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(ON_THE_OTHER_GENERATION.get(SpringBootGeneration.ARTIFACT));
    }

    @ParameterizedTest
    @ValueSource(strings = {"2.7.18", "3.4.11", "3.6.0", "3.50.0", "4.1.2", "4.0.0-M3", "5.0.0"})
    void everyOtherLineIsUnsupported(String version) {
        assumeThat(version).doesNotStartWith(LINE + ".");
        assertThatThrownBy(() -> SpringBootVersionCheck.check(DEFAULTS, version))
                .hasMessageContaining("runs on Spring Boot " + version + ". ");
    }

    @Test
    void aVersionThatCannotBeReadFailsSayingSo() {
        assertThatThrownBy(() -> SpringBootVersionCheck.check(DEFAULTS, null))
                .hasMessageContaining("runs on a Spring Boot version that SpringBootVersion.getVersion() cannot tell.");
        assertThatThrownBy(() -> SpringBootVersionCheck.check(DEFAULTS, "latest"))
                .hasMessageContaining("runs on Spring Boot version 'latest', which is not major.minor[.patch].");
    }

    @Test
    void theCheckSwitchedOffLetsAnUnsupportedVersionStart() {
        MockEnvironment off = new MockEnvironment().withProperty("fenceline.spring-boot-version-check", "false");
        assertThatCode(() -> SpringBootVersionCheck.check(off, "5.0.0")).doesNotThrowAnyException();
        assertThatCode(() -> SpringBootVersionCheck.check(off, null)).doesNotThrowAnyException();
    }

    private final ApplicationContextRunner autoConfigured = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(FencelineAutoConfiguration.class))
            .withUserConfiguration(UnknownFencelinePropertiesTest.Offline.class)
            .withPropertyValues(
                    "fenceline.migrations.enabled=false", "fenceline.election.endpoints=http://127.0.0.1:1");

    @Test
    void theAutoConfigurationStartsOnTheSpringBootVersionInUse() {
        autoConfigured.run(context -> assertThat(context).hasNotFailed().hasSingleBean(FencelineProperties.class));
    }

    @Test
    void aSwitchThatIsNeitherTrueNorFalseFailsStartUpNamingItsValue() {
        autoConfigured
                .withPropertyValues("fenceline.spring-boot-version-check=nope")
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(messages(context.getStartupFailure()))
                            .contains("fenceline.spring-boot-version-check must be true or false, was 'nope'");
                });
    }

    @Test
    void withFencelineDisabledTheVersionIsNotChecked() {
        // @ConditionalOnProperty(fenceline.enabled) is evaluated first; the check never runs, so nor does its switch.
        autoConfigured
                .withPropertyValues("fenceline.enabled=false", "fenceline.spring-boot-version-check=nope")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(FencelineProperties.class));
    }

    private static List<String> messages(Throwable failure) {
        List<String> messages = new ArrayList<>();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            messages.add(String.valueOf(t.getMessage()));
        }
        return messages;
    }
}
