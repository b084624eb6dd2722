package dev.fenceline.election.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Failures are classified by what the server said, not by the fact that something failed. */
class EtcdFailureTest {

    static Stream<Arguments> rows() {
        return Stream.of(
                // the finding: "lease not found" is etcd's definite answer, not an unknown outcome
                Arguments.of(
                        "NOT_FOUND lease not found (gRPC)",
                        Status.NOT_FOUND
                                .withDescription("etcdserver: requested lease not found")
                                .asRuntimeException(),
                        EtcdFailure.Kind.DEFINITE,
                        true),
                Arguments.of(
                        "NOT_FOUND wrapped twice",
                        new CompletionException(new ExecutionException(Status.NOT_FOUND
                                .withDescription("etcdserver: requested lease not found")
                                .asException())),
                        EtcdFailure.Kind.DEFINITE,
                        true),
                Arguments.of(
                        "PERMISSION_DENIED",
                        Status.PERMISSION_DENIED.asRuntimeException(),
                        EtcdFailure.Kind.DEFINITE,
                        false),
                Arguments.of(
                        "INVALID_ARGUMENT",
                        Status.INVALID_ARGUMENT.asRuntimeException(),
                        EtcdFailure.Kind.DEFINITE,
                        false),
                Arguments.of(
                        "UNAUTHENTICATED",
                        Status.UNAUTHENTICATED.asRuntimeException(),
                        EtcdFailure.Kind.DEFINITE,
                        false),
                // may have reached the server: unknown
                Arguments.of(
                        "DEADLINE_EXCEEDED",
                        Status.DEADLINE_EXCEEDED.asRuntimeException(),
                        EtcdFailure.Kind.UNKNOWN,
                        false),
                Arguments.of("UNAVAILABLE", Status.UNAVAILABLE.asRuntimeException(), EtcdFailure.Kind.UNKNOWN, false),
                Arguments.of("CANCELLED", Status.CANCELLED.asRuntimeException(), EtcdFailure.Kind.UNKNOWN, false),
                Arguments.of(
                        "local timeout",
                        new CompletionException(new TimeoutException()),
                        EtcdFailure.Kind.UNKNOWN,
                        false),
                Arguments.of("no status at all", new IllegalStateException("boom"), EtcdFailure.Kind.UNKNOWN, false));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void classifiesByGrpcStatus(String name, Throwable failure, EtcdFailure.Kind kind, boolean leaseNotFound) {
        assertThat(EtcdFailure.classify(failure)).isEqualTo(kind);
        assertThat(EtcdFailure.isLeaseNotFound(failure)).isEqualTo(leaseNotFound);
        assertThat(EtcdFailure.describe(failure))
                .startsWith(
                        kind == EtcdFailure.Kind.DEFINITE
                                ? "rejected"
                                : kind == EtcdFailure.Kind.UNKNOWN && failure.getCause() instanceof TimeoutException
                                        ? "no answer"
                                        : "outcome unknown");
    }
}
