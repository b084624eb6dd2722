package dev.fenceline.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Runs the protocol model check (model/check.sh: spin verifies the fence and the election model, and every
 * variant with one defence removed must produce a counterexample) as part of {@code mvn verify}.
 *
 * <p>Skips when spin or gcc is missing, unless FENCELINE_REQUIRE_SPIN=1, which turns the skip into a failure.
 */
class ProtocolModelIT {
    /** check.sh's own bound is under two minutes on two idle cores; a busy machine gets head room. */
    private static final long TIMEOUT_SECONDS = 600;

    private static final Pattern SUMMARY = Pattern.compile("(?m)^(\\d+) passed, (\\d+) failed$");

    @Test
    void everyCheckOfTheModelGivesTheExpectedVerdict() throws IOException, InterruptedException {
        requireTool("spin", "apt-get install -y spin (or scripts/ensure-spin.sh as root)");
        requireTool("gcc", "apt-get install -y gcc");
        Path script = repositoryRoot().resolve("model/check.sh");
        assertThat(script).as("the model check script").isRegularFile();

        Path log = Files.createTempFile("fenceline-model-check", ".log");
        try {
            Process process = new ProcessBuilder("bash", script.toString())
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
            boolean finished = process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            if (!finished) {
                // check.sh ends its own searches on TERM and removes model/target
                process.destroy();
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
            String output = Files.readString(log, StandardCharsets.UTF_8);
            System.out.println(output);
            assertThat(finished)
                    .as("model/check.sh finished within %d s; output:%n%s", TIMEOUT_SECONDS, output)
                    .isTrue();
            assertThat(process.exitValue())
                    .as("model/check.sh exit code; output:%n%s", output)
                    .isZero();
            Matcher summary = SUMMARY.matcher(output);
            assertThat(summary.find())
                    .as("a final line 'N passed, 0 failed' in:%n%s", output)
                    .isTrue();
            assertThat(Integer.parseInt(summary.group(2))).as("failed checks").isZero();
            assertThat(Integer.parseInt(summary.group(1))).as("passed checks").isPositive();
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /** Maven runs the module with its folder as working directory; the model lives at the repository root. */
    private static Path repositoryRoot() {
        Path dir = Path.of("").toAbsolutePath();
        for (int up = 0; up < 4 && dir != null; up++, dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("model/check.sh"))) {
                return dir;
            }
        }
        throw new IllegalStateException(
                "model/check.sh not found in " + Path.of("").toAbsolutePath() + " or its 3 parent folders");
    }

    private static void requireTool(String tool, String install) throws IOException, InterruptedException {
        Process which = new ProcessBuilder(List.of("sh", "-c", "command -v " + tool))
                .redirectErrorStream(true)
                .start();
        boolean present = which.waitFor(10, TimeUnit.SECONDS) && which.exitValue() == 0;
        String message =
                tool + " is not installed, so the protocol model check cannot run; install it with: " + install;
        if (!present && "1".equals(System.getenv("FENCELINE_REQUIRE_SPIN"))) {
            fail(message + " (FENCELINE_REQUIRE_SPIN=1 requires the check)");
        }
        Assumptions.assumeTrue(present, message);
    }
}
