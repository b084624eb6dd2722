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
        "SELECT $1::bigint; SELECT $2", "CALL p()",
        "UPDATE t SET path = 'C:\\dir\\' WHERE id = 1", "SELECT a$b FROM t; SELECT 1", "SELECT E'it\\'s'; SELECT 2",
        "SELECT 1 -- COMMIT\r", "SELECT name 'x'", "SELECT $q$ a$x$; COMMIT $q$"})
    void otherSqlIsLeftAlone(String sql) {
        assertThat(TransactionControl.find(sql)).isNull();
    }

    /**
     * Text where the server's lexer ends a token earlier than a naive scan would, so a COMMIT the server runs would be
     * hidden inside what the scan took for a string, a dollar quote or a comment: {@code $} inside an identifier does
     * not start a dollar quote ({@code a$x$} is one identifier), a quote after a word ending in {@code e} is a standard
     * string ({@code name'\'} is the type name's literal), a line comment ends at a carriage return too, and with
     * {@code standard_conforming_strings} set off by the session a backslash escapes the quote in a plain string.
     */
    @ParameterizedTest(name = "[{index}] {0}")
    @ValueSource(strings = {"SELECT 1 AS a$x$; COMMIT; --$x$", "SELECT 1 AS x$$; COMMIT; --$$",
        "SELECT name'\\'; COMMIT; --'", "SELECT 1; --x\rCOMMIT",
        "SELECT '\\''; COMMIT; --'"})
    void sqlThatEndsTheTransactionIsFoundWhereTheServerEndsATokenEarly(String sql) {
        assertThat(TransactionControl.find(sql)).isNotNull();
    }

    /** A SQL-standard function body ends with END after a semicolon, inside the CREATE: it ends no transaction. */
    @ParameterizedTest(name = "[{index}] {0}")
    @ValueSource(strings = {"CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END",
        "create or replace procedure p(a int) language sql begin atomic insert into t values (a); delete from t; end;"
            + " select 1",
        "CREATE FUNCTION f() RETURNS TABLE (a int) LANGUAGE sql /* x */ BEGIN /* y */ ATOMIC SELECT 1; End",
        "CREATE FUNCTION f() RETURNS void LANGUAGE sql BEGIN ATOMIC END"})
    void sqlStandardFunctionBodiesAreLeftAlone(String sql) {
        assertThat(TransactionControl.find(sql)).isNull();
    }

    /**
     * The body is taken to end at its first END, never later than where the server ends it (each of these runs the
     * COMMIT or END after a routine, or has no body at all, as PostgreSQL 15 parses them): a CASE inside a body, or
     * {@code case} and {@code end} as column labels, leave a body refused rather than a COMMIT unseen.
     */
    @ParameterizedTest(name = "[{index}] {0}")
    @ValueSource(strings = {"CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END; COMMIT",
        "CREATE FUNCTION f(begin atomic) RETURNS int LANGUAGE sql AS 'select 1'; COMMIT; SELECT 1 AS end",
        "SELECT begin atomic FROM t; COMMIT; SELECT 1 AS end",
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1 AS case; END; COMMIT; SELECT 2 AS end",
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1 case; END; COMMIT; SELECT 2 AS end",
        "CREATE FUNCTION f() RETURNS void LANGUAGE sql BEGIN ATOMIC END; END",
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT CASE WHEN true THEN 1 END; END",
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT '; END'; END; COMMIT",
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT E'\\'; END'; END; COMMIT"})
    void aRoutineBodyHidesNoStatementAfterIt(String sql) {
        assertThat(TransactionControl.find(sql)).isNotNull();
    }

    @Test
    void namesTheStatementItFound() {
        assertThat(TransactionControl.find("UPDATE t SET a = 1; COMMIT; BEGIN")).isEqualTo("COMMIT");
        assertThat(TransactionControl.find("SELECT 1;\n  end  ")).isEqualTo("end");
    }
}
