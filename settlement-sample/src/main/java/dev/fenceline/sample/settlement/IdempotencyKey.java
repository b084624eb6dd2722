package dev.fenceline.sample.settlement;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Collection;
import java.util.HexFormat;

/**
 * The idempotency key of a settlement batch, derived from its content only: {@code sha256:} + hex
 * SHA-256 of the sorted, de-duplicated payment ids written as decimal, comma-separated. The same set of
 * payments always yields the same key whatever the order, term or worker, so a retried batch hits the
 * unique constraint on {@code settlement_batch.idempotency_key} instead of settling twice.
 */
public final class IdempotencyKey {
    public static final String PREFIX = "sha256:";

    private IdempotencyKey() {}

    public static String of(Collection<Long> paymentIds) {
        if (paymentIds == null || paymentIds.isEmpty()) {
            throw new IllegalArgumentException("a batch needs at least one payment id");
        }
        long[] ids = paymentIds.stream()
                .mapToLong(Long::longValue)
                .sorted()
                .distinct()
                .toArray();
        return of(ids);
    }

    public static String of(long... paymentIds) {
        if (paymentIds == null || paymentIds.length == 0) {
            throw new IllegalArgumentException("a batch needs at least one payment id");
        }
        long[] ids = Arrays.stream(paymentIds).sorted().distinct().toArray();
        StringBuilder sb = new StringBuilder(ids.length * 8);
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] <= 0) {
                throw new IllegalArgumentException("payment ids are positive (got " + ids[i] + ")");
            }
            if (i > 0) {
                sb.append(',');
            }
            sb.append(ids[i]);
        }
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(sb.toString().getBytes(StandardCharsets.US_ASCII));
            return PREFIX + HexFormat.of().formatHex(d);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is always available", e);
        }
    }
}
