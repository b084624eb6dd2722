package dev.fenceline.sample.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class TableTest {
    private final Table t = new Table(
            List.of("id", "leader_id", "business_key"),
            List.of(Arrays.asList(1L, "w1", "a,b"), Arrays.asList(2L, null, "say \"hi\"")));

    @Test
    void textIsAlignedWithARowCount() {
        String s = t.text();
        assertThat(s.lines().toList()).hasSize(5);
        assertThat(s.lines().findFirst().orElseThrow()).isEqualTo("id | leader_id | business_key");
        assertThat(s).contains("(2 rows)");
    }

    @Test
    void jsonIsAnArrayOfObjectsKeepingNumbersAndNulls() throws Exception {
        JsonNode n = new ObjectMapper().readTree(t.json());
        assertThat(n.isArray()).isTrue();
        assertThat(n.get(0).get("id").isNumber()).isTrue();
        assertThat(n.get(1).get("leader_id").isNull()).isTrue();
        assertThat(n.get(1).get("business_key").asText()).isEqualTo("say \"hi\"");
    }

    @Test
    void csvQuotesFieldsThatNeedIt() {
        assertThat(t.csv()).isEqualTo("id,leader_id,business_key\n1,w1,\"a,b\"\n2,,\"say \"\"hi\"\"\"\n");
    }

    @Test
    void unknownFormatIsRefused() {
        assertThat(Table.Format.parse("CSV")).isEqualTo(Table.Format.CSV);
        assertThatThrownBy(() -> Table.Format.parse("xml")).hasMessageContaining("table, json, csv");
    }
}
