package dev.fenceline.election.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class AsyncLimiterTest {

    @Test
    void neverMoreThanPermitsInFlightAndEveryCallRuns() throws Exception {
        AsyncLimiter limiter = new AsyncLimiter(3);
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger maxInFlight = new AtomicInteger();
        List<CompletableFuture<Integer>> pending = new ArrayList<>();
        List<CompletableFuture<Integer>> results = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            int n = i;
            results.add(limiter.submit(() -> {
                maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                CompletableFuture<Integer> f = new CompletableFuture<>();
                synchronized (pending) {
                    pending.add(f);
                }
                return f.thenApply(v -> n);
            }));
        }
        assertThat(limiter.queued()).isEqualTo(17);
        for (int done = 0; done < 20; ) {
            CompletableFuture<Integer> f = null;
            synchronized (pending) {
                if (!pending.isEmpty()) {
                    f = pending.remove(0);
                }
            }
            if (f == null) {
                Thread.sleep(1);
                continue;
            }
            inFlight.decrementAndGet();
            f.complete(0);
            done++;
        }
        for (int i = 0; i < 20; i++) {
            assertThat(results.get(i).get(5, TimeUnit.SECONDS)).isEqualTo(i);
        }
        assertThat(maxInFlight.get()).isLessThanOrEqualTo(3);
        assertThat(limiter.queued()).isZero();
    }

    @Test
    void synchronousFailuresReleaseTheirPermit() throws Exception {
        AsyncLimiter limiter = new AsyncLimiter(1);
        List<CompletableFuture<Object>> results = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            results.add(limiter.submit(() -> {
                throw new IllegalStateException("boom");
            }));
        }
        for (CompletableFuture<Object> r : results) {
            assertThat(r).failsWithin(5, TimeUnit.SECONDS);
        }
        assertThat(limiter.submit(() -> CompletableFuture.completedFuture("ok")).get(5, TimeUnit.SECONDS))
                .isEqualTo("ok");
    }
}
