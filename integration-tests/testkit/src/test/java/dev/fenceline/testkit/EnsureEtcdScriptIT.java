package dev.fenceline.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The install script must tell a non-root user exactly what to run instead of failing obscurely. */
class EnsureEtcdScriptIT {

    @Test
    void missingEtcdAsNonRootStopsWithTheInstallCommand() throws Exception {
        assumeTrue(Processes.runningAsRoot(), "needs root to run the script as the unprivileged user 'nobody'");
        Path script = Path.of("../../scripts/ensure-etcd.sh").toAbsolutePath().normalize();
        assertThat(script).exists();
        // A copy anyone can read: the checkout may live under a folder 'nobody' cannot enter.
        Path copy = Files.createTempFile("ensure-etcd-", ".sh");
        try {
            Files.copy(script, copy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("rwxr-xr-x"));
            Processes.Result r = Processes.run(
                    List.of("runuser", "-u", "nobody", "--", "env", "PATH=/nonexistent", "/bin/bash", copy.toString()),
                    Duration.ofSeconds(30),
                    Path.of("/tmp"),
                    Map.of());
            assertThat(r.exitCode()).as(r.stderr()).isEqualTo(1);
            assertThat(r.stderr())
                    .contains("not installed and this is not root")
                    .contains("apt-get install -y etcd-server etcd-client");
        } finally {
            Files.deleteIfExists(copy);
        }
    }
}
