package dev.fenceline.spring;

import dev.fenceline.fencing.FencedWriterConfig;
import java.util.List;
import java.util.Map;

/** {@code fenceline.writer.*}: the {@link dev.fenceline.fencing.FencedWriter}'s settings. */
public class WriterProperties extends SessionTimeoutProperties {
    static final PropertyNames PROPERTIES = PropertyNames.of(
            "fenceline.writer",
            List.of("maxPayloadBytes", "connectionRecheckAttempts", "lockTimeout", "idleInTransactionSessionTimeout"),
            Map.of());

    /** Largest audit payload of a WriteDescription, 0 to 8192 bytes. */
    private int maxPayloadBytes = FencedWriterConfig.DB_PAYLOAD_CAP;

    /** Check once per (resource, table) that a WriteDescription's table is protected for the token's resource. */
    private boolean checkProtectedTables = true;

    /** After a lost connection, how many fresh connections to try when re-checking the term, 1 to 10. */
    private int connectionRecheckAttempts = 3;

    /** The writer's configuration, built and checked by {@link FencedWriterConfig.Builder#build()}. */
    FencedWriterConfig fencedWriterConfig() {
        return PROPERTIES.rethrow(() -> FencedWriterConfig.builder()
                .maxPayloadBytes(maxPayloadBytes)
                .checkProtectedTables(checkProtectedTables)
                .connectionRecheckAttempts(connectionRecheckAttempts)
                .lockTimeout(getLockTimeout())
                .idleInTransactionSessionTimeout(getIdleInTransactionSessionTimeout())
                .build());
    }

    public int getMaxPayloadBytes() {
        return maxPayloadBytes;
    }

    public void setMaxPayloadBytes(int maxPayloadBytes) {
        this.maxPayloadBytes = maxPayloadBytes;
    }

    public boolean isCheckProtectedTables() {
        return checkProtectedTables;
    }

    public void setCheckProtectedTables(boolean checkProtectedTables) {
        this.checkProtectedTables = checkProtectedTables;
    }

    public int getConnectionRecheckAttempts() {
        return connectionRecheckAttempts;
    }

    public void setConnectionRecheckAttempts(int connectionRecheckAttempts) {
        this.connectionRecheckAttempts = connectionRecheckAttempts;
    }
}
