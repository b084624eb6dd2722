package dev.fenceline.election.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class EtcdVersionsTest {
    @ParameterizedTest(name = "{0} -> affected={1}")
    @CsvSource({
        "3.4.23, true", // Debian bookworm's etcd, what the scripts install
        "v3.4.29, true",
        "3.4.30, true", // 3.4.30 only fixed a nil-pointer panic; the revoke fix is in 3.4.31
        "3.4.31, false",
        "3.5.0, true",
        "3.5.12, true",
        "3.5.13, false",
        "3.5.17, false",
        "3.6.0, false",
        "3.3.27, true",
        "3.4.23-rc.0, true",
        "garbage, false",
        "'', false",
    })
    void leaseRevocationBug(String version, boolean affected) {
        assertThat(EtcdVersions.hasLeaseRevocationBug(version)).isEqualTo(affected);
    }
}
