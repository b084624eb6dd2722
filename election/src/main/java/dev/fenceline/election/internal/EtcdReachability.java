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
import org.jspecify.annotations.Nullable;

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
            if (t instanceof SSLHandshakeException
                    || t instanceof CertificateException
                    || isHttp2ProtocolError(t)
                    || isNotTls(t)) {
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
            if (isNotTls(t)) {
                return "the endpoint answered TLS with something that is not TLS: it is a plaintext server; write an "
                        + "etcd served without TLS as http://, or use etcd's https:// client URL";
            }
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
    static String transientHint(@Nullable Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String m = t.getMessage();
            if (m != null && (m.contains("Network closed for unknown reason") || m.contains("Connection reset"))) {
                return "; the endpoint accepted the connection and closed it without answering: if this lasts, check that it "
                        + "is an etcd client URL and not another server (PostgreSQL does this)";
            }
        }
        return "";
    }

    /**
     * The {@code http://} endpoints, when every one of them answers a TLS ClientHello with a TLS record and
     * {@code failure} is what a TLS server gives a plaintext client (it closes the connection without a word); null
     * otherwise. Such endpoints will never answer plaintext gRPC, so the caller fails at once instead of waiting out
     * connectTimeout. While one of them still speaks plaintext (a cluster half-way to TLS), the failure may pass, and
     * nothing is decided. One ClientHello per plaintext endpoint, each bounded by {@code timeout}; only on that failure.
     */
    static @Nullable String plaintextEndpointSpeakingTls(
            java.util.List<String> endpoints, Throwable failure, java.time.Duration timeout) {
        if (transientHint(failure).isEmpty()) {
            return null;
        }
        java.util.List<String> speakingTls = new java.util.ArrayList<>();
        for (String endpoint : endpoints) {
            java.net.URI uri = java.net.URI.create(endpoint);
            if (!"http".equalsIgnoreCase(uri.getScheme())) {
                continue;
            }
            if (uri.getHost() == null
                    || !answersTls(uri.getHost(), uri.getPort() < 0 ? 2379 : uri.getPort(), timeout)) {
                return null;
            }
            speakingTls.add(endpoint);
        }
        return speakingTls.isEmpty() ? null : String.join(", ", speakingTls);
    }

    /**
     * One connection attempt's question "do the http:// endpoints speak TLS?", asked at most once: at the first failure
     * that a TLS server gives a plaintext client ({@link #plaintextEndpointSpeakingTls}).
     */
    static final class TlsQuestion {
        private final java.util.List<String> endpoints;
        private final java.time.Duration timeout;
        private boolean asked;

        TlsQuestion(java.util.List<String> endpoints, java.time.Duration timeout) {
            this.endpoints = endpoints;
            this.timeout = timeout;
        }

        /** The endpoints that speak TLS, if {@code failure} is the first to make it worth asking and they do. */
        @Nullable
        String speakingTls(Throwable failure) {
            if (asked || transientHint(failure).isEmpty()) {
                return null;
            }
            asked = true;
            return plaintextEndpointSpeakingTls(endpoints, failure, timeout);
        }
    }

    /** The message for {@link #plaintextEndpointSpeakingTls}'s finding, after "what failed". */
    static String speaksTlsMessage(String what, String endpoint) {
        return what + ": etcd endpoint(s) " + endpoint + " speak TLS (they answered a TLS ClientHello) but are written "
                + "with http://; not retried: write them as https:// and give the CA that signed their certificates "
                + "(tlsCaFile, and a client certificate if etcd asks for one)";
    }

    /**
     * Sends a TLS ClientHello (made by the JDK's own TLS engine) and reads the first two bytes of the answer: a TLS
     * handshake or alert record (type 22 or 21, version major 3) means a TLS server, whatever else it says.
     */
    static boolean answersTls(String host, int port, java.time.Duration timeout) {
        int ms = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        try {
            javax.net.ssl.SSLContext tls = javax.net.ssl.SSLContext.getInstance("TLS");
            tls.init(null, null, null);
            javax.net.ssl.SSLEngine engine = tls.createSSLEngine(host, port);
            engine.setUseClientMode(true);
            engine.beginHandshake();
            java.nio.ByteBuffer hello =
                    java.nio.ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
            engine.wrap(java.nio.ByteBuffer.allocate(0), hello);
            hello.flip();
            try (java.net.Socket socket = new java.net.Socket()) {
                socket.connect(new java.net.InetSocketAddress(host, port), ms);
                socket.setSoTimeout(ms);
                socket.getOutputStream().write(hello.array(), 0, hello.limit());
                socket.getOutputStream().flush();
                int type = socket.getInputStream().read();
                int major = socket.getInputStream().read();
                return (type == 22 || type == 21) && major == 3;
            }
        } catch (java.io.IOException | java.security.GeneralSecurityException | RuntimeException e) {
            return false;
        }
    }

    /**
     * The TLS client got something that is not TLS back: the endpoint is a plaintext server (an {@code https://}
     * URL for a plaintext etcd, or another service).
     */
    private static boolean isNotTls(Throwable t) {
        String m = t.getMessage();
        return t.getClass().getSimpleName().equals("NotSslRecordException")
                || (t instanceof javax.net.ssl.SSLException
                        && m != null
                        && (m.contains("not an SSL/TLS record")
                                || m.contains("Unsupported or unrecognized SSL message")));
    }

    /** gRPC's transport could not make sense of what the server sent as HTTP/2 (an HTTP/1 answer, for one). */
    private static boolean isHttp2ProtocolError(Throwable t) {
        return t instanceof Http2Exception;
    }
}
