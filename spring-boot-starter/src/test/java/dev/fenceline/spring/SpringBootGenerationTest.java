package dev.fenceline.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.SpringBootVersion;

/**
 * The auto-configurations {@link FencelineAutoConfiguration} runs after are named as strings (they moved between Boot
 * 3 and Boot 4), so no compiler checks them: each must be a class of the Boot this artifact is built and tested on.
 */
class SpringBootGenerationTest {
    @ParameterizedTest
    @ValueSource(
            strings = {
                SpringBootGeneration.DATA_SOURCE_AUTO_CONFIGURATION,
                SpringBootGeneration.COMPOSITE_METER_REGISTRY_AUTO_CONFIGURATION,
                SpringBootGeneration.SIMPLE_METRICS_EXPORT_AUTO_CONFIGURATION
            })
    void everyAutoConfigurationNamedIsOneOfThisBoot(String name) {
        assertThatCode(() -> Class.forName(name)).doesNotThrowAnyException();
    }

    @Test
    void theSupportedLineIsTheBootInUse() {
        assertThat(SpringBootVersion.getVersion()).startsWith(SpringBootGeneration.SUPPORTED.get(0) + ".");
    }
}
