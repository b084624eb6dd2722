package dev.fenceline.sample.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class ValidationTest {
    @Test
    void acceptsPostgresJdbcUrls() {
        assertThat(Validation.jdbcUrl("jdbc:postgresql://127.0.0.1:5432/fenceline?user=postgres"))
                .isEqualTo("jdbc:postgresql://127.0.0.1:5432/fenceline?user=postgres");
        assertThat(Validation.jdbcUrl(" jdbc:postgresql://db/x ")).isEqualTo("jdbc:postgresql://db/x");
    }

    @Test
    void malformedJdbcUrlsAreNamedInTheMessage() {
        assertThatThrownBy(() -> Validation.jdbcUrl("postgres://127.0.0.1/x"))
                .isInstanceOf(BadInputException.class)
                .hasMessageContaining("--jdbc-url")
                .hasMessageContaining("postgres://127.0.0.1/x");
        assertThatThrownBy(() -> Validation.jdbcUrl("jdbc:postgresql://127.0.0.1:99999/x"))
                .isInstanceOf(BadInputException.class)
                .hasMessageContaining("--jdbc-url");
        assertThatThrownBy(() -> Validation.jdbcUrl("jdbc:postgresql://127.0.0.1:abc/x"))
                .isInstanceOf(BadInputException.class)
                .hasMessageContaining("--jdbc-url");
        assertThatThrownBy(() -> Validation.jdbcUrl(""))
                .isInstanceOf(BadInputException.class)
                .hasMessageContaining("FENCELINE_JDBC_URL");
    }

    @Test
    void etcdEndpointsAreCommaSeparatedHttpUrlsWithPorts() {
        assertThat(Validation.etcdEndpoints("http://127.0.0.1:2379, http://127.0.0.1:2380/"))
                .containsExactly("http://127.0.0.1:2379", "http://127.0.0.1:2380");
        assertThat(Validation.etcdEndpoints("127.0.0.1:2379,https://etcd2:2379"))
                .as("no scheme means http, as with etcdctl")
                .containsExactly("http://127.0.0.1:2379", "https://etcd2:2379");
        for (String bad : List.of(
                "127.0.0.1",
                "http://127.0.0.1",
                "http://127.0.0.1:2379,,",
                "ftp://h:1",
                "http://h:70000",
                "http://h:1/v3/kv")) {
            assertThatThrownBy(() -> Validation.etcdEndpoints(bad))
                    .as(bad)
                    .isInstanceOf(BadInputException.class)
                    .hasMessageContaining("--etcd");
        }
    }

    @Test
    void electionNamesAreRestrictedToASafeAlphabet() {
        assertThat(Validation.electionName("settlement")).isEqualTo("settlement");
        assertThat(Validation.electionName("shard-07_eu")).isEqualTo("shard-07_eu");
        for (String bad : new String[] {"", "Settlement", "a/b", "x'; drop table y; --", "-x", "a".repeat(64)}) {
            assertThatThrownBy(() -> Validation.electionName(bad))
                    .as(bad)
                    .isInstanceOf(BadInputException.class)
                    .hasMessageContaining("--election");
        }
    }

    @Test
    void numericRangesNameTheOptionTheLimitAndTheValue() {
        assertThatThrownBy(() -> Validation.between("--payments", -5, 1, 10))
                .isInstanceOf(BadInputException.class)
                .hasMessage("--payments must be between 1 and 10 (got -5)");
        assertThat(Validation.between("--payments", 10, 1, 10)).isEqualTo(10);
    }
}
