package dev.fenceline.election.internal;

import io.grpc.Status;
import io.netty.handler.codec.http2.Http2Exception;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.security.cert.CertificateException;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLHandshakeException;

/**
 * Whether waiting can fix a failure to reach etcd (pure; table-tested). Another question than
 * {@link EtcdFailure}'s (did a write take effect?): here, will the same call with the same configuration succeed
 * later?
 *
 * <p>{@link Verdict#TRANSIENT}: nothing answered, or etcd answered "not now" — connection refused, no route, a
 * name that does not resolve (yet), UNAVAILABLE ("no leader", a member stopping), DEADLINE_EXCEEDED, a local
 * timeout, CANCELLED, ABORTED, RESOURCE_EXHAUSTED, UNKNOWN, and any failure without a status we do not recognise.
 *
 * <p>{@link Verdict#PERMANENT}: the endpoint answered in a way that the same configuration will get again —
 * something that does not speak HTTP/2 (an HTTP/1 server, a TLS etcd reached with {@code http://}), a TLS handshake or certificate failure, a gRPC server without etcd's API (UNIMPLEMENTED), or
 * etcd's own refusal: INVALID_ARGUMENT (etcd 3.4 answers a wrong password so), UNAUTHENTICATED,
 * PERMISSION_DENIED, FAILED_PRECONDITION, NOT_FOUND, ALREADY_EXISTS, OUT_OF_RANGE, INTERNAL, DATA_LOSS.
 *
 * <p>Known limit, measured: a server that accepts the TCP connection and closes it without a word (PostgreSQL
 * does so with gRPC's connection preface) gives UNAVAILABLE "Network closed for unknown reason" or "Connection
 * reset", which a member shutting down also gives: it stays transient, and {@link #transientHint} says what to check if it lasts.
 */
final class EtcdReachability {
    enum Verdict {
        TRANSIENT,
        PERMANENT
    }

    private EtcdReachability() {}

    static Verdict classify(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SSLHandshakeException || t instanceof CertificateException || isHttp2ProtocolError(t)) {
                return Verdict.PERMANENT;
            }
            if (t instanceof ConnectException
                    || t instanceof NoRouteToHostException
                    || t instanceof UnknownHostException
                    || t instanceof SocketTimeoutException
                    || t instanceof TimeoutException) {
                return Verdict.TRANSIENT;
            }
        }
        Status.Code code = EtcdFailure.code(failure);
        if (code == null) {
            return Verdict.TRANSIENT;
        }
        return switch (code) {
            case INVALID_ARGUMENT,
                    UNAUTHENTICATED,
                    PERMISSION_DENIED,
                    UNIMPLEMENTED,
                    FAILED_PRECONDITION,
                    NOT_FOUND,
                    ALREADY_EXISTS,
                    OUT_OF_RANGE,
                    INTERNAL,
                    DATA_LOSS -> Verdict.PERMANENT;
            case OK, UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ABORTED, RESOURCE_EXHAUSTED, UNKNOWN ->
                Verdict.TRANSIENT;
        };
    }

    /** What an operator should check for a {@link Verdict#PERMANENT} failure (one clause, for messages). */
    static String whatToCheck(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SSLHandshakeException || t instanceof CertificateException) {
                return "check the TLS settings: that tlsCaFile is the CA that signed the etcd server certificate, that the "
                        + "client certificate is one etcd trusts, and that the endpoint is etcd's https:// client URL";
            }
            if (isHttp2ProtocolError(t)) {
                return "the server at the endpoint does not speak gRPC over HTTP/2, so it is not an etcd client URL: check "
                        + "host and port (an HTTP server, another service?) and the scheme (https:// for a TLS "
                        + "etcd)";
            }
        }
        Status.Code code = EtcdFailure.code(failure);
        if (code == null) {
            return "check the endpoints";
        }
        return switch (code) {
            case UNIMPLEMENTED -> "the gRPC server at the endpoint does not implement etcd's API: check host and port";
            case UNAUTHENTICATED, INVALID_ARGUMENT ->
                "check the etcd username and password (etcd answers a wrong "
                        + "password with INVALID_ARGUMENT) and that etcd's auth is configured as expected";
            case PERMISSION_DENIED -> "check the etcd user's role: it needs readwrite on the key prefix";
            default -> "check the etcd cluster's health and version and the endpoints";
        };
    }

    /**
     * For the message of a {@link Verdict#PERMANENT} failure: "status CODE: description (root cause); not retried:
     * what to check". The root cause is where gRPC's status hides it ("First received frame was not SETTINGS").
     */
    static String notRetried(Throwable failure) {
        Throwable t = EtcdFailure.unwrap(failure);
        Status.Code c = EtcdFailure.code(t);
        String m = t instanceof io.grpc.StatusRuntimeException sre
                ? sre.getStatus().getDescription()
                : t.getMessage();
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return (c != null ? "status " + c : t.getClass().getSimpleName()) + (m == null ? "" : ": " + m)
                + (root == t || root.getMessage() == null ? "" : " (" + root.getMessage() + ")")
                + "; not retried: " + whatToCheck(failure);
    }

    /** For a transient failure that a wrong endpoint also gives: what to check if it lasts (else empty). */
    static String transientHint(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String m = t.getMessage();
            if (m != null && (m.contains("Network closed for unknown reason") || m.contains("Connection reset"))) {
                return "; the endpoint accepted the connection and closed it without answering: if this lasts, check that it "
                        + "is an etcd client URL and not another server (PostgreSQL does this)";
            }
        }
        return "";
    }

    /** gRPC's transport could not make sense of what the server sent as HTTP/2 (an HTTP/1 answer, for one). */
    private static boolean isHttp2ProtocolError(Throwable t) {
        return t instanceof Http2Exception;
    }
}
