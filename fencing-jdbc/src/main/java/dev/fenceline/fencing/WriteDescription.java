package dev.fenceline.fencing;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * What a fenced transaction is about to write, recorded in {@code fencing.rejected_write} if it is rejected.
 *
 * <p>Validated up front: {@code table} is {@code table} or {@code schema.table} of unquoted identifiers (and must be
 * protected for the token's resource: checked by the writer before anything is written), {@code operation} is a word
 * such as INSERT/UPDATE/DELETE/UPSERT, {@code businessKey} at most 500 characters, {@code payloadJson} valid JSON
 * whose UTF-8 size is checked against {@link FencedWriterConfig#maxPayloadBytes()}.
 */
public final class WriteDescription {
    static final Pattern TABLE = Pattern.compile("(?:[A-Za-z_][A-Za-z0-9_$]{0,62}\\.)?[A-Za-z_][A-Za-z0-9_$]{0,62}");
    static final Pattern OPERATION = Pattern.compile("[A-Z][A-Z_]{0,31}");
    static final int MAX_BUSINESS_KEY = 500;
    private static final JsonFactory JSON = new JsonFactory();

    private final String table;
    private final String operation;
    private final @Nullable String businessKey;
    private final @Nullable String payloadJson;
    private final int payloadBytes;

    private WriteDescription(
            String table, String operation, @Nullable String businessKey, @Nullable String payloadJson, int bytes) {
        this.table = table;
        this.operation = operation;
        this.businessKey = businessKey;
        this.payloadJson = payloadJson;
        this.payloadBytes = bytes;
    }

    /**
     * @param table       protected table ({@code name} or {@code schema.name}, unquoted identifiers)
     * @param operation   e.g. "INSERT"; upper-cased
     * @param businessKey business or idempotency key, may be null
     * @param payloadJson JSON document describing the write, may be null
     * @throws IllegalArgumentException naming the invalid argument
     */
    public static WriteDescription of(
            String table, String operation, @Nullable String businessKey, @Nullable String payloadJson) {
        if (table == null || !TABLE.matcher(table).matches()) {
            throw new IllegalArgumentException("table must be 'name' or 'schema.name' of unquoted identifiers, was "
                    + (table == null ? "null" : "'" + FencingToken.abbreviate(table) + "'"));
        }
        String op = operation == null ? null : operation.strip().toUpperCase(Locale.ROOT);
        if (op == null || !OPERATION.matcher(op).matches()) {
            throw new IllegalArgumentException("operation must be a word such as INSERT, UPDATE or DELETE, was "
                    + (operation == null ? "null" : "'" + FencingToken.abbreviate(operation) + "'"));
        }
        if (businessKey != null && businessKey.length() > MAX_BUSINESS_KEY) {
            throw new IllegalArgumentException("businessKey cannot be longer than " + MAX_BUSINESS_KEY
                    + " characters, was " + businessKey.length());
        }
        int bytes = 0;
        if (payloadJson != null) {
            bytes = payloadJson.getBytes(StandardCharsets.UTF_8).length;
            checkJson(payloadJson);
        }
        return new WriteDescription(table, op, businessKey, payloadJson, bytes);
    }

    /** Just the table and operation. */
    public static WriteDescription of(String table, String operation) {
        return of(table, operation, null, null);
    }

    private static void checkJson(String json) {
        try (JsonParser p = JSON.createParser(json)) {
            if (p.nextToken() == null) {
                throw new IllegalArgumentException("payloadJson must be a JSON document, was empty");
            }
            p.skipChildren();
            if (p.nextToken() != null) {
                throw new IllegalArgumentException(
                        "payloadJson must be a single JSON document, found trailing content");
            }
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException("payloadJson is not valid JSON: " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw new IllegalArgumentException("payloadJson is not valid JSON: " + e.getMessage(), e);
        }
    }

    public String table() {
        return table;
    }

    public String operation() {
        return operation;
    }

    /** May be null. */
    public @Nullable String businessKey() {
        return businessKey;
    }

    /** May be null. */
    public @Nullable String payloadJson() {
        return payloadJson;
    }

    /** UTF-8 size of {@link #payloadJson()}; 0 when there is none. */
    public int payloadBytes() {
        return payloadBytes;
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof WriteDescription d
                && d.table.equals(table)
                && d.operation.equals(operation)
                && Objects.equals(d.businessKey, businessKey)
                && Objects.equals(d.payloadJson, payloadJson);
    }

    @Override
    public int hashCode() {
        return Objects.hash(table, operation, businessKey, payloadJson);
    }

    @Override
    public String toString() {
        return "WriteDescription{" + operation + " " + table + (businessKey == null ? "" : " key=" + businessKey)
                + ", payload " + payloadBytes + " bytes}";
    }
}
