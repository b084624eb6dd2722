package dev.fenceline.fencing;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TransactionControlTest {

    @ParameterizedTest(name = "[{index}] {0}")
    @ValueSource(strings = {"COMMIT", "commit;", " Commit  And Chain", "END", "end transaction", "ABORT", "ROLLBACK",
        "rollback work", "ROLLBACK AND CHAIN", "PREPARE TRANSACTION 'x'", "BEGIN", "START TRANSACTION",
        "UPDATE t SET a = 1; COMMIT", "UPDATE t SET a = 1;COMMIT;BEGIN", "/* note */ COMMIT", "-- note\nCOMMIT",
        "SELECT ';'; COMMIT", "SELECT $$;$$; commit", "SELECT E'\\';'; COMMIT", "COMMIT /* nested /* */ */"})
    void sqlThatEndsTheTransactionIsFound(String sql) {
        assertThat(TransactionControl.find(sql)).isNotNull();
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @ValueSource(strings = {"UPDATE t SET note = 'COMMIT' WHERE id = 1", "SELECT 1", "ROLLBACK TO SAVEPOINT s",
        "rollback to s", "ROLLBACK TRANSACTION TO SAVEPOINT s", "SAVEPOINT s", "RELEASE SAVEPOINT s",
        "PREPARE q AS SELECT 1", "SELECT $body$ COMMIT; $body$", "SELECT 'x;COMMIT'", "SELECT \"commit\" FROM t",
        "/* COMMIT */ SELECT 1", "-- COMMIT\nSELECT 1", "INSERT INTO t VALUES (1); SELECT 2", "", "committed_at",
        "SELECT $1::bigint; SELECT $2", "CALL p()"})
    void otherSqlIsLeftAlone(String sql) {
        assertThat(TransactionControl.find(sql)).isNull();
    }

    @Test
    void namesTheStatementItFound() {
        assertThat(TransactionControl.find("UPDATE t SET a = 1; COMMIT; BEGIN")).isEqualTo("COMMIT");
        assertThat(TransactionControl.find("SELECT 1;\n  end  ")).isEqualTo("end");
    }
}
