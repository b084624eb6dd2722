package dev.fenceline.election.internal;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fenceline.election.LeaderRecord;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * JSON codec of the leader record (snake_case, readable with {@code etcdctl get}). Decoding is strict about
 * the identity fields (leader_id, term, lease_id, nonce) and lenient about unknown fields, so newer writers
 * can add fields.
 */
public final class LeaderRecordCodec {
    private static final ObjectMapper JSON = new ObjectMapper()
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false)
            .setSerializationInclusion(JsonInclude.Include.ALWAYS);

    static {
        // Decode once at class initialisation, which comes with the first encode, when a campaign begins: reading the
        // won record then finds Jackson's parser and java.time's parsing loaded, instead of loading some 40 classes
        // between winning and the first fenced commit.
        decode(encode(new LeaderRecord("warm-up", 1, 1, "warm-up", Map.of("warm", "up"), Instant.EPOCH)));
    }

    private LeaderRecordCodec() {}

    public static byte[] encode(LeaderRecord r) {
        ObjectNode n = JSON.createObjectNode();
        n.put("leader_id", r.leaderId());
        n.put("term", r.term());
        n.put("lease_id", r.leaseId());
        n.put("nonce", r.nonce());
        ObjectNode md = n.putObject("metadata");
        r.metadata().forEach(md::put);
        n.put("acquired_at", r.acquiredAt().toString());
        try {
            return JSON.writeValueAsBytes(n);
        } catch (IOException e) {
            throw new IllegalStateException("cannot encode leader record " + r, e);
        }
    }

    /**
     * The leader record in {@code bytes}.
     *
     * @throws IllegalArgumentException with the reason when the bytes are not a valid leader record
     */
    public static LeaderRecord decode(byte[] bytes) {
        JsonNode n;
        try {
            n = JSON.readTree(bytes);
        } catch (IOException e) {
            throw new IllegalArgumentException("leader record is not JSON: " + preview(bytes), e);
        }
        if (n == null || !n.isObject()) {
            throw new IllegalArgumentException("leader record is not a JSON object: " + preview(bytes));
        }
        String leaderId = text(n, "leader_id", bytes);
        long term = number(n, "term", bytes);
        long leaseId = number(n, "lease_id", bytes);
        String nonce = text(n, "nonce", bytes);
        Map<String, String> md = new LinkedHashMap<>();
        JsonNode mdNode = n.get("metadata");
        if (mdNode != null && mdNode.isObject()) {
            mdNode.fields()
                    .forEachRemaining(e -> md.put(e.getKey(), e.getValue().asText()));
        }
        Instant at = Instant.EPOCH;
        JsonNode atNode = n.get("acquired_at");
        if (atNode != null && atNode.isTextual()) {
            try {
                at = Instant.parse(atNode.asText());
            } catch (DateTimeParseException ignored) {
                // informational field: keep EPOCH rather than refusing a record that is otherwise valid
            }
        }
        return new LeaderRecord(leaderId, term, leaseId, nonce, md, at);
    }

    private static String text(JsonNode n, String field, byte[] bytes) {
        JsonNode v = n.get(field);
        if (v == null || !v.isTextual() || v.asText().isEmpty()) {
            throw new IllegalArgumentException("leader record has no text field '" + field + "': " + preview(bytes));
        }
        return v.asText();
    }

    private static long number(JsonNode n, String field, byte[] bytes) {
        JsonNode v = n.get(field);
        if (v == null || !v.canConvertToLong() || !v.isIntegralNumber()) {
            throw new IllegalArgumentException("leader record has no integer field '" + field + "': " + preview(bytes));
        }
        return v.asLong();
    }

    private static String preview(byte[] bytes) {
        String s = new String(bytes, StandardCharsets.UTF_8);
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }
}
