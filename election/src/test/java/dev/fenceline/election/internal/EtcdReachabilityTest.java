package dev.fenceline.election.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.election.internal.EtcdReachability.Verdict;
import io.grpc.Status;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.security.cert.CertificateExpiredException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Waiting fixes "nothing answered" and etcd's "not now"; it does not fix a wrong endpoint, TLS or a refusal. */
class EtcdReachabilityTest {

    static Stream<Arguments> rows() {
        return Stream.of(
                // nothing answered, or etcd said "not now"
                Arguments.of(
                        "connection refused (as jetcd reports it)",
                        Status.UNAVAILABLE
                                .withDescription("io exception")
                                .withCause(new ConnectException("Connection refused"))
                                .asRuntimeException(),
                        Verdict.TRANSIENT),
                Arguments.of(
                        "no leader",
                        Status.UNAVAILABLE
                                .withDescription("etcdserver: no leader")
                                .asRuntimeException(),
                        Verdict.TRANSIENT),
                Arguments.of(
                        "closed without a word (a member stopping; also PostgreSQL's answer to gRPC)",
                        Status.UNAVAILABLE
                                .withDescription("Network closed for unknown reason")
                                .asRuntimeException(),
                        Verdict.TRANSIENT),
                Arguments.of(
                        "reset (a member killed; also PostgreSQL's answer to gRPC)",
                        Status.UNAVAILABLE
                                .withCause(new java.net.SocketException("Connection reset"))
                                .asRuntimeException(),
                        Verdict.TRANSIENT),
                Arguments.of("deadline exceeded", Status.DEADLINE_EXCEEDED.asRuntimeException(), Verdict.TRANSIENT),
                Arguments.of(
                        "local timeout, wrapped", new ExecutionException(new TimeoutException()), Verdict.TRANSIENT),
                Arguments.of(
                        "host name not resolvable (yet)",
                        Status.UNAVAILABLE
                                .withCause(new UnknownHostException("etcd-0.etcd"))
                                .asRuntimeException(),
                        Verdict.TRANSIENT),
                Arguments.of("too many requests", Status.RESOURCE_EXHAUSTED.asRuntimeException(), Verdict.TRANSIENT),
                Arguments.of("cancelled", Status.CANCELLED.asRuntimeException(), Verdict.TRANSIENT),
                Arguments.of("unknown status", Status.UNKNOWN.asRuntimeException(), Verdict.TRANSIENT),
                Arguments.of("no status at all", new IllegalStateException("boom"), Verdict.TRANSIENT),
                // the same configuration will get the same answer
                Arguments.of(
                        "an HTTP/1 server (first frame not SETTINGS)",
                        Status.INTERNAL
                                .withDescription("http2 exception")
                                .withCause(
                                        Http2Exception.connectionError(
                                                Http2Error.PROTOCOL_ERROR,
                                                "First received frame was not SETTINGS. Hex dump for first 5 bytes: 485454502f"))
                                .asRuntimeException(),
                        Verdict.PERMANENT),
                Arguments.of(
                        "TLS: untrusted server certificate",
                        Status.UNAVAILABLE
                                .withDescription("io exception")
                                .withCause(new SSLHandshakeException("PKIX path building failed"))
                                .asRuntimeException(),
                        Verdict.PERMANENT),
                Arguments.of(
                        "TLS: expired certificate",
                        new CompletionException(new CertificateExpiredException("expired")),
                        Verdict.PERMANENT),
                Arguments.of(
                        "a gRPC server that is not etcd", Status.UNIMPLEMENTED.asRuntimeException(), Verdict.PERMANENT),
                Arguments.of(
                        "wrong password (etcd 3.4)",
                        Status.INVALID_ARGUMENT
                                .withDescription("etcdserver: authentication failed, invalid user ID or password")
                                .asRuntimeException(),
                        Verdict.PERMANENT),
                Arguments.of("invalid auth token", Status.UNAUTHENTICATED.asRuntimeException(), Verdict.PERMANENT),
                Arguments.of(
                        "permission denied, wrapped twice",
                        new CompletionException(new ExecutionException(Status.PERMISSION_DENIED.asException())),
                        Verdict.PERMANENT),
                Arguments.of("failed precondition", Status.FAILED_PRECONDITION.asRuntimeException(), Verdict.PERMANENT),
                Arguments.of("internal", Status.INTERNAL.asRuntimeException(), Verdict.PERMANENT),
                Arguments.of("data loss", Status.DATA_LOSS.asRuntimeException(), Verdict.PERMANENT));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void classifiesWhetherWaitingCanFixAFailureToReachEtcd(String name, Throwable failure, Verdict verdict) {
        assertThat(EtcdReachability.classify(failure)).isEqualTo(verdict);
    }

    static Stream<Arguments> permanentRows() {
        return rows().filter(r -> r.get()[2] == Verdict.PERMANENT);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("permanentRows")
    void everyPermanentFailureSaysWhatToCheck(String name, Throwable failure, Verdict verdict) {
        assertThat(EtcdReachability.notRetried(failure))
                .contains("; not retried: ")
                .contains("check");
    }

    @org.junit.jupiter.api.Test
    void whatToCheckNamesTheLikelyMistake() {
        assertThat(EtcdReachability.whatToCheck(Status.INTERNAL
                        .withCause(Http2Exception.connectionError(
                                Http2Error.PROTOCOL_ERROR, "First received frame was not SETTINGS"))
                        .asRuntimeException()))
                .contains("not an etcd client URL")
                .contains("HTTP server");
        assertThat(EtcdReachability.whatToCheck(Status.UNAVAILABLE
                        .withCause(new SSLHandshakeException("x"))
                        .asRuntimeException()))
                .contains("tlsCaFile");
        assertThat(EtcdReachability.whatToCheck(Status.INVALID_ARGUMENT.asRuntimeException()))
                .contains("password");
        assertThat(EtcdReachability.whatToCheck(Status.PERMISSION_DENIED.asRuntimeException()))
                .contains("readwrite");
        assertThat(EtcdReachability.whatToCheck(Status.UNIMPLEMENTED.asRuntimeException()))
                .contains("etcd's API");
    }
}
