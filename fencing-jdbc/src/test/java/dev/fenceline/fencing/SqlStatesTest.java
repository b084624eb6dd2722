package dev.fenceline.fencing;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The one SQLSTATE table: what each code the writer acts on becomes. */
class SqlStatesTest {
    private static final FencingToken TOKEN = FencingToken.of("settlement", 7, "a");

    @ParameterizedTest(name = "{0} while entering -> {1}")
    @CsvSource({
        "FL003, IllegalArgumentException",
        "FL004, UnknownResourceException",
        "FL005, FenceUnavailableException",
        "FL009, TermJumpException",
        "FL010, FenceUnavailableException",
        "FL011, FenceUnavailableException",
        "08006, FenceUnavailableException"
    })
    void aCodeRaisedWhileEnteringBecomesItsException(String sqlState, String exception) {
        RuntimeException e = SqlStates.enteringFailure(TOKEN, new SQLException("raised", sqlState));
        assertThat(e.getClass().getSimpleName()).isEqualTo(exception);
        assertThat(e.getCause()).isInstanceOf(SQLException.class);
    }

    @ParameterizedTest(name = "{0}: connection lost = {1}")
    @CsvSource({
        "08006, true",
        "08003, true",
        "57P01, true",
        "57P02, true",
        "57P03, true",
        "57014, false",
        "40001, false",
        "FL001, false"
    })
    void onlyClass08AndTheServerEndingTheSessionAreConnectionFailures(String sqlState, boolean lost) {
        assertThat(SqlStates.isConnectionFailure(new SQLException("x", sqlState)))
                .isEqualTo(lost);
    }

    @ParameterizedTest(name = "{0}: spoiled by the session = {1}")
    @CsvSource({"FL014, true", "57014, true", "55P03, true", "FL001, false", "08006, false"})
    void leftoverModesAndTimeoutsSpoilTheFirstStatement(String sqlState, boolean spoiled) {
        assertThat(SqlStates.spoiledBySession(new SQLException("x", sqlState))).isEqualTo(spoiled);
    }

    @ParameterizedTest(name = "{0}: transient = {1}")
    @CsvSource({
        "3F000, false",
        "42P01, false",
        "42883, false",
        "42501, false",
        "28000, false",
        "28P01, false",
        "3D000, false",
        "08006, true",
        "57P01, true",
        "55P03, true",
        "57014, true",
        "40001, true",
        "FL005, true"
    })
    void onlyFailuresWaitingCannotFixAreNotTransientAndEachNamesItsFix(String sqlState, boolean transientFailure) {
        FenceUnavailableException e = new FenceUnavailableException(
                "could not read the mark",
                new RuntimeException(new SQLException("ERROR: x\n  Position: 30", sqlState)));
        assertThat(e.isTransient()).isEqualTo(transientFailure);
        if (!transientFailure) {
            assertThat(e.fix()).isNotBlank();
            assertThat(e.getMessage()).contains("not transient: " + e.fix()).doesNotContain("\n");
        } else {
            assertThat(e.fix()).isNull();
        }
    }
}
