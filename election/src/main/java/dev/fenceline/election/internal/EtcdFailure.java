package dev.fenceline.election.internal;

import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import java.util.Locale;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * What a failed etcd call tells us, by gRPC status (pure; unit-tested).
 *
 * <p>Only a status the server sent after deciding proves the request did not take effect: etcd checks the
 * lease, the arguments and the permissions before it proposes anything, so NOT_FOUND ("lease not found"),
 * INVALID_ARGUMENT, PERMISSION_DENIED, UNAUTHENTICATED, FAILED_PRECONDITION and OUT_OF_RANGE are
 * {@link Kind#DEFINITE}. A local timeout, DEADLINE_EXCEEDED, UNAVAILABLE, CANCELLED, UNKNOWN, INTERNAL or an
 * exception we do not recognise can happen after the request reached the server, so the outcome is
 * {@link Kind#UNKNOWN} and a transaction must be resolved by reading.
 */
final class EtcdFailure {
    enum Kind {
        DEFINITE,
        UNKNOWN
    }

    private EtcdFailure() {}

    /** The gRPC status code carried by {@code e} (through wrappers), or null if it carries none. */
    static Status.@Nullable Code code(@Nullable Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof EtcdException ee) {
                return Status.Code.valueOf(ee.getErrorCode().name());
            }
            if (t instanceof StatusRuntimeException sre) {
                return sre.getStatus().getCode();
            }
            if (t instanceof StatusException se) {
                return se.getStatus().getCode();
            }
        }
        return null;
    }

    static Kind classify(@Nullable Throwable e) {
        Status.Code c = code(e);
        if (c == null) {
            return Kind.UNKNOWN;
        }
        return switch (c) {
            case NOT_FOUND,
                    INVALID_ARGUMENT,
                    PERMISSION_DENIED,
                    UNAUTHENTICATED,
                    FAILED_PRECONDITION,
                    OUT_OF_RANGE,
                    ALREADY_EXISTS,
                    UNIMPLEMENTED -> Kind.DEFINITE;
            default -> Kind.UNKNOWN;
        };
    }

    static boolean isDefinite(Throwable e) {
        return classify(e) == Kind.DEFINITE;
    }

    /** etcd's answer for a lease it does not have (expired or revoked): NOT_FOUND "lease not found". */
    static boolean isLeaseNotFound(Throwable e) {
        if (code(e) != Status.Code.NOT_FOUND) {
            return false;
        }
        Throwable t = unwrap(e);
        String m = t == null ? null : t.getMessage();
        // NOT_FOUND is also used for other missing things in later etcd versions; a lease call's NOT_FOUND is
        // the lease, and the message confirms it where present.
        return m == null || m.toLowerCase(Locale.ROOT).contains("lease");
    }

    /** What failed in a {@code Future.get()}: the cause, or {@code e} itself in the (unseen) case it has none. */
    static Throwable causeOf(ExecutionException e) {
        Throwable cause = e.getCause();
        return cause != null ? cause : e;
    }

    static Throwable unwrap(Throwable e) {
        Throwable t = e;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static boolean isLocalTimeout(Throwable e) {
        return unwrap(e) instanceof TimeoutException;
    }

    /** One line for logs: kind, gRPC code if any, and the message. */
    static String describe(@Nullable Throwable e) {
        if (e == null) {
            return "none";
        }
        Throwable t = unwrap(e);
        if (t instanceof TimeoutException) {
            return "no answer within the call timeout (outcome unknown)";
        }
        Status.Code c = code(t);
        String m = t.getMessage();
        return (classify(t) == Kind.DEFINITE ? "rejected" : "outcome unknown") + ", "
                + (c != null ? "status " + c : t.getClass().getSimpleName()) + (m == null ? "" : ": " + m);
    }

    /** Keeps ErrorCode referenced so a jetcd rename fails the build here, not at runtime in {@link #code}. */
    @SuppressWarnings("unused")
    private static final ErrorCode NOT_FOUND = ErrorCode.NOT_FOUND;
}
