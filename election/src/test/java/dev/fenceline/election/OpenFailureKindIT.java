package dev.fenceline.election;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import dev.fenceline.testkit.PostgresServer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * open() (and ElectionAdmin.connect) says whether waiting can fix its failure ({@link ElectionException#isTransient()}), against real servers that
 * are not etcd (an etcd peer URL is no such case: etcd 3.4.23 serves its client API on the peer port too:
 * open() against a member's peer URL succeeded).
 * A permanent failure is thrown at the first answer: with a connectTimeout of 120 s, a retried failure would end
 * in the "within connectTimeout" message instead of "not retried".
 */
class OpenFailureKindIT {
    private static ElectionConfig config(String endpoint, Duration connectTimeout) {
        return ElectionConfig.builder()
                .endpoints(endpoint)
                .connectTimeout(connectTimeout)
                .closeOnShutdown(false)
                .meterRegistry(new SimpleMeterRegistry())
                .build();
    }

    @Test
    void anHttpServerFailsAtOnceAsPermanent() throws Exception {
        HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        http.createContext("/", x -> {
            x.sendResponseHeaders(404, -1);
            x.close();
        });
        http.start();
        try {
            String endpoint = "http://127.0.0.1:" + http.getAddress().getPort();
            assertThatThrownBy(() -> ElectionSession.open(config(endpoint, Duration.ofSeconds(120))))
                    .isInstanceOfSatisfying(
                            ElectionException.class,
                            e -> assertThat(e.isTransient()).isFalse())
                    .hasMessageContaining("etcd at [" + endpoint + "] cannot be used")
                    .hasMessageContaining("First received frame was not SETTINGS")
                    .hasMessageContaining("not retried");
            assertThatThrownBy(() -> ElectionAdmin.connect(config(endpoint, Duration.ofSeconds(120))))
                    .isInstanceOfSatisfying(
                            ElectionException.class,
                            e -> assertThat(e.isTransient()).isFalse())
                    .hasMessageContaining("etcd at [" + endpoint + "] cannot be used")
                    .hasMessageContaining("not retried");
        } finally {
            http.stop(0);
        }
    }

    @Test
    void aPortWhereNothingListensIsTransient() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        assertThatThrownBy(() -> ElectionSession.open(config("http://127.0.0.1:" + port, Duration.ofSeconds(1))))
                .isInstanceOfSatisfying(
                        ElectionException.class,
                        e -> assertThat(e.isTransient()).isTrue())
                .hasMessageContaining("granted a lease within connectTimeout=1000ms");
    }

    /**
     * The known limit: PostgreSQL closes (or resets) a connection that opens with gRPC's preface without a word, as a
     * member shutting down may; that stays transient, and the message says what to check if it lasts.
     */
    @Test
    void aPostgresqlPortStaysTransientButTheMessageSaysWhatToCheck() {
        String endpoint = "http://127.0.0.1:" + PostgresServer.shared().port();
        // several attempts: one that times out on a loaded machine must not hide what the others saw
        assertThatThrownBy(() -> ElectionSession.open(config(endpoint, Duration.ofSeconds(5))))
                .isInstanceOfSatisfying(
                        ElectionException.class,
                        e -> assertThat(e.isTransient()).isTrue())
                .hasMessageContaining("closed it without answering")
                .hasMessageContaining("check that it is an etcd client URL");
    }
}
