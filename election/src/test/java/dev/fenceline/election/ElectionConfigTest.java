package dev.fenceline.election;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ElectionConfigTest {
    private static ElectionConfig.Builder valid() {
        return ElectionConfig.builder().endpoints("http://127.0.0.1:2379");
    }

    @Test
    void defaultsDeriveFromTtl() {
        ElectionConfig c = valid().build();
        assertThat(c.ttl()).isEqualTo(Duration.ofSeconds(5));
        assertThat(c.renewInterval()).isEqualTo(Duration.ofSeconds(1));
        assertThat(c.safetyMargin()).isEqualTo(Duration.ofSeconds(1));
        assertThat(c.callTimeout()).isEqualTo(Duration.ofSeconds(1));
        assertThat(c.keyPrefix()).isEqualTo("/fenceline/");
        ElectionConfig two = valid().ttl(Duration.ofSeconds(2)).build();
        assertThat(two.renewInterval()).isEqualTo(Duration.ofMillis(400));
        assertThat(two.safetyMargin()).isEqualTo(Duration.ofMillis(400));
    }

    @Test
    void tlsAndCredentialsAreCheckedNamingPropertyAndValue(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        java.nio.file.Path ca = java.nio.file.Files.writeString(dir.resolve("ca.crt"), "pem");
        assertThatThrownBy(() -> valid().endpoints("https://127.0.0.1:1", "http://127.0.0.1:2")
                        .tlsCaFile(ca)
                        .build())
                .hasMessage(
                        "endpoints must be all http:// or all https:// but were [https://127.0.0.1:1, http://127.0.0.1:2]");
        assertThatThrownBy(() -> valid().tlsCaFile(ca).build())
                .hasMessageStartingWith("tlsCaFile/tlsClientCert need https:// endpoints");
        assertThatThrownBy(() -> valid().endpoints("https://127.0.0.1:1")
                        .tlsCaFile(dir.resolve("missing.crt"))
                        .build())
                .hasMessage("tlsCaFile must be a readable PEM file but '" + dir.resolve("missing.crt")
                        + "' is not readable");
        assertThatThrownBy(() -> valid().endpoints("https://127.0.0.1:1")
                        .tlsCaFile(ca)
                        .tlsClientCert(ca, null)
                        .build())
                .hasMessageStartingWith("tlsClientCert needs both a certificate and a key file");
        assertThatThrownBy(() -> valid().credentials("app", null).build())
                .hasMessage(
                        "credentials need a non-blank username and a password but got username='app' password=null");
        ElectionConfig ok = valid().environment(java.util.Map.of(
                        "FENCELINE_ETCD",
                        "https://127.0.0.1:1",
                        "FENCELINE_ETCD_CA",
                        ca.toString(),
                        "FENCELINE_ETCD_USER",
                        "app",
                        "FENCELINE_ETCD_PASSWORD",
                        "s3cret"))
                .build();
        assertThat(ok.tls()).isTrue();
        assertThat(ok.username()).isEqualTo("app");
        assertThat(ok.toString()).contains("password=***").doesNotContain("s3cret");
    }

    @Test
    void leaseLossHoldOffIsOffByDefaultAndZeroOrBetweenTtlAndTenTtl(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        assertThat(valid().build().leaseLossHoldOff()).isZero();
        assertThat(valid().ttl(Duration.ofSeconds(2))
                        .leaseLossHoldOff(Duration.ofSeconds(2))
                        .build()
                        .leaseLossHoldOff())
                .isEqualTo(Duration.ofSeconds(2));
        assertThat(valid().ttl(Duration.ofSeconds(2))
                        .leaseLossHoldOff(Duration.ofSeconds(20))
                        .build()
                        .leaseLossHoldOff())
                .isEqualTo(Duration.ofSeconds(20));
        assertThatThrownBy(() -> valid().ttl(Duration.ofSeconds(2))
                        .leaseLossHoldOff(Duration.ofMillis(1999))
                        .build())
                .isInstanceOf(ElectionException.class)
                .hasMessage(
                        "leaseLossHoldOff must be 0ms (off) or between ttl (2000ms) and 10 x ttl (20000ms) but was 1999ms");
        assertThatThrownBy(() -> valid().ttl(Duration.ofSeconds(2))
                        .leaseLossHoldOff(Duration.ofMillis(20001))
                        .build())
                .hasMessage(
                        "leaseLossHoldOff must be 0ms (off) or between ttl (2000ms) and 10 x ttl (20000ms) but was 20001ms");
        assertThatThrownBy(
                        () -> valid().leaseLossHoldOff(Duration.ofSeconds(-5)).build())
                .hasMessageStartingWith("leaseLossHoldOff must be 0ms (off) or between ttl (5000ms)");
        assertThatThrownBy(() -> valid().leaseLossHoldOff(null).build())
                .hasMessage("leaseLossHoldOff must not be null");
        assertThat(valid().environment(java.util.Map.of("FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF", "10s"))
                        .build()
                        .leaseLossHoldOff())
                .isEqualTo(Duration.ofSeconds(10));
        assertThat(valid().environment(java.util.Map.of("FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF", "PT7S"))
                        .build()
                        .leaseLossHoldOff())
                .isEqualTo(Duration.ofSeconds(7));
        assertThatThrownBy(
                        () -> valid().environment(java.util.Map.of("FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF", "soon")))
                .hasMessage(
                        "FENCELINE_ELECTION_LEASE_LOSS_HOLD_OFF must be a duration like 10s, 5000ms, 2m or PT10S but was 'soon'");
        assertThat(valid().leaseLossHoldOff(Duration.ofSeconds(6)).build().toString())
                .contains("leaseLossHoldOff=6000ms");
        java.nio.file.Path pw = java.nio.file.Files.writeString(dir.resolve("pw"), "s3cret\n");
        assertThat(valid().environment(java.util.Map.of(
                                "FENCELINE_ETCD_USER", "app", "FENCELINE_ETCD_PASSWORD_FILE", pw.toString()))
                        .build()
                        .password())
                .isEqualTo("s3cret");
        assertThatThrownBy(() -> valid().environment(java.util.Map.of(
                        "FENCELINE_ETCD_PASSWORD_FILE", dir.resolve("nope").toString())))
                .hasMessage("FENCELINE_ETCD_PASSWORD_FILE must name a readable file but '" + dir.resolve("nope")
                        + "' is not readable (NoSuchFileException)");
    }

    @Test
    void endpointsMustBeNonEmptyAndWellFormed() {
        assertThatThrownBy(() -> ElectionConfig.builder().build())
                .isInstanceOf(ElectionException.class)
                .hasMessage(
                        "endpoints must contain at least one etcd client URL (e.g. http://127.0.0.1:2379) but was empty");
        assertThat(valid().endpoints("127.0.0.1:2379", " etcd2:2379").build().endpoints())
                .as("no scheme means http, as with etcdctl")
                .isEqualTo(List.of("http://127.0.0.1:2379", "http://etcd2:2379"));
        assertThatThrownBy(() -> valid().endpoints("ftp://127.0.0.1:2379").build())
                .hasMessage("endpoints must be etcd client URLs like http://127.0.0.1:2379 or https://etcd1:2379 but "
                        + "'ftp://127.0.0.1:2379' is not: it must start with http:// or https://");
        assertThatThrownBy(() -> valid().endpoints("127.0.0.1").build())
                .hasMessageEndingWith("it has no port in 1..65535");
        assertThatThrownBy(() -> valid().endpoints("https://127.0.0.1:2379").build())
                .hasMessageStartingWith("tlsCaFile must be set for https:// endpoints");
        assertThatThrownBy(() -> valid().endpoints("http://127.0.0.1").build())
                .hasMessageEndingWith("it has no port in 1..65535");
        assertThatThrownBy(() -> valid().endpoints("http://127.0.0.1:2379/v3").build())
                .hasMessageEndingWith("it has a path");
        assertThatThrownBy(() -> valid().endpoints("http://:2379").build()).hasMessageContaining("is not:");
        assertThatThrownBy(() -> valid().endpoints("http://a b:1").build()).hasMessageContaining("it is not a URI");
        assertThat(valid().endpointsCsv(" http://127.0.0.1:1, http://127.0.0.1:2 ,")
                        .build()
                        .endpoints())
                .isEqualTo(List.of("http://127.0.0.1:1", "http://127.0.0.1:2"));
    }

    @Test
    void ttlLimitsNamePropertyLimitAndValue() {
        assertThatThrownBy(() -> valid().ttl(Duration.ofSeconds(1)).build())
                .hasMessage("ttl must be between 2000ms and 3600000ms but was 1000ms");
        assertThatThrownBy(() -> valid().ttl(Duration.ofMillis(2500)).build())
                .hasMessage("ttl must be a whole number of seconds (etcd lease TTLs are seconds) but was 2500ms");
    }

    @Test
    void renewIntervalMustBeBelowAThirdOfTtl() {
        assertThatThrownBy(() -> valid().ttl(Duration.ofSeconds(6))
                        .renewInterval(Duration.ofSeconds(2))
                        .build())
                .hasMessage("renewInterval must be greater than 0 and less than ttl/3 (2000ms) but was 2000ms");
        assertThatThrownBy(() -> valid().renewInterval(Duration.ZERO).build())
                .hasMessage("renewInterval must be greater than 0 and less than ttl/3 (1666ms) but was 0ms");
    }

    @Test
    void safetyMarginMustLeaveRoomForARenewal() {
        assertThatThrownBy(() -> valid().renewInterval(Duration.ofSeconds(1))
                        .safetyMargin(Duration.ofSeconds(4))
                        .build())
                .hasMessage(
                        "safetyMargin must be greater than 0 and less than ttl - renewInterval (4000ms) but was 4000ms");
        assertThatThrownBy(() -> valid().safetyMargin(Duration.ZERO).build())
                .hasMessageStartingWith("safetyMargin must be greater than 0");
    }

    @Test
    void callTimeoutAndOtherBounds() {
        assertThatThrownBy(() -> valid().callTimeout(Duration.ofMillis(5)).build())
                .hasMessage("callTimeout must be between 10ms and ttl - safetyMargin (4000ms) but was 5ms");
        assertThatThrownBy(() -> valid().connectTimeout(Duration.ZERO).build())
                .hasMessage("connectTimeout must be greater than 0 and at most 300000ms but was 0ms");
        assertThatThrownBy(() -> valid().retryBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1))
                        .build())
                .hasMessage("retryBackoffMax must be at least retryBackoffMin (2000ms) but was 1000ms");
        assertThatThrownBy(() -> valid().keyPrefix("fenceline").build())
                .hasMessage("keyPrefix must start and end with '/' (e.g. /fenceline/) but was: 'fenceline'");
        assertThatThrownBy(() -> valid().meterRegistry(null).build())
                .hasMessageStartingWith("meterRegistry must not be null");
    }

    @Test
    void keysAreDocumentedAndNamesValidated() {
        ElectionKeys k = valid().keyPrefix("/x/").build().keys("settlement");
        assertThat(k.leader()).isEqualTo("/x/settlement/leader");
        assertThat(k.term()).isEqualTo("/x/settlement/term");
        assertThat(k.termFloor()).isEqualTo("/x/settlement/term-floor");
        assertThat(k.paused()).isEqualTo("/x/settlement/paused");
        assertThat(k.resignRequest()).isEqualTo("/x/settlement/resign-request");
        assertThatThrownBy(() -> ElectionKeys.of("/x/", "a/b"))
                .hasMessage("election name must match [A-Za-z0-9._-]{1,128}, was: 'a/b'");
        assertThatThrownBy(() -> ElectionKeys.of("/x/", "")).hasMessageContaining("was: ''");
    }

    @Test
    void toBuilderRoundTrips() {
        ElectionConfig c = valid().ttl(Duration.ofSeconds(3)).build();
        assertThat(c.toBuilder().build()).isEqualTo(c);
    }
}
