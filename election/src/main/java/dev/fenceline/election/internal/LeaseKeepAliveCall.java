package dev.fenceline.election.internal;

import io.etcd.jetcd.api.LeaseGrpc;
import io.etcd.jetcd.api.LeaseKeepAliveRequest;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Sends exactly one LeaseKeepAlive request on its own raw gRPC stream, then half-closes it, so the response
 * answers exactly that request.
 *
 * <p>Why not jetcd: its {@code keepAliveOnce} writes its request a second time when the call completes (etcd
 * counted two renewals per call), and its keepAlive stream cannot say which request a response answers (the
 * send time the fail-closed deadline needs).
 */
final class LeaseKeepAliveCall {
    private LeaseKeepAliveCall() {}

    /** @param memberUri names the member in the failure when the stream ends without a response */
    static CompletableFuture<LeaseKeepAliveResponse> send(
            LeaseGrpc.LeaseStub lease, String memberUri, long leaseId, Duration timeout) {
        CompletableFuture<LeaseKeepAliveResponse> f = new CompletableFuture<>();
        lease.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .leaseKeepAlive(
                        new ClientResponseObserver<LeaseKeepAliveRequest, io.etcd.jetcd.api.LeaseKeepAliveResponse>() {
                            /** Set by beforeStart, which gRPC calls before any response arrives. */
                            private @Nullable ClientCallStreamObserver<LeaseKeepAliveRequest> requests;

                            @Override
                            public void beforeStart(ClientCallStreamObserver<LeaseKeepAliveRequest> requestStream) {
                                this.requests = requestStream;
                            }

                            @Override
                            public void onNext(io.etcd.jetcd.api.LeaseKeepAliveResponse value) {
                                f.complete(new LeaseKeepAliveResponse(value));
                                ClientCallStreamObserver<LeaseKeepAliveRequest> r = requests;
                                if (r != null) {
                                    r.onCompleted(); // half-close: no further request on this stream
                                }
                            }

                            @Override
                            public void onError(Throwable t) {
                                f.completeExceptionally(t);
                            }

                            @Override
                            public void onCompleted() {
                                f.completeExceptionally(new IllegalStateException(
                                        "LeaseKeepAlive stream of " + memberUri + " ended without a response"));
                            }
                        })
                .onNext(LeaseKeepAliveRequest.newBuilder().setID(leaseId).build());
        return f;
    }
}
