package dev.fenceline.faults.workload;

import java.util.Locale;
import java.util.Objects;

/**
 * How the workers reach PostgreSQL in a fault run.
 *
 * @param pooler  the workers go through a PgBouncer in transaction mode; the runner itself (payments, checks) connects
 *                without it
 * @param standby a streaming standby of the primary: {@link Standby#SYNCHRONOUS} ({@code remote_apply}: a failover
 *                loses no acknowledged commit) or {@link Standby#ASYNCHRONOUS} (it can); with either, everyone reaches
 *                the primary through one TCP proxy that a failover repoints at the promoted standby
 */
public record PostgresSetup(boolean pooler, Standby standby) {
    /** The workers connect to a primary without a standby, directly (the default). */
    public static final PostgresSetup DIRECT = new PostgresSetup(false, Standby.NONE);

    public enum Standby {
        NONE,
        SYNCHRONOUS,
        ASYNCHRONOUS;

        /** {@code none}, {@code sync} or {@code async} (as the soak's {@code --standby} takes it). */
        public static Standby parse(String value) {
            String v = value == null ? "" : value.strip().toLowerCase(Locale.ROOT);
            return switch (v) {
                case "none" -> NONE;
                case "sync", "synchronous" -> SYNCHRONOUS;
                case "async", "asynchronous" -> ASYNCHRONOUS;
                default ->
                    throw new IllegalArgumentException("--standby must be none, sync or async, was '" + value + "'");
            };
        }
    }

    public PostgresSetup {
        Objects.requireNonNull(standby, "standby");
    }

    public boolean hasStandby() {
        return standby != Standby.NONE;
    }

    @Override
    public String toString() {
        return (pooler ? "through PgBouncer (transaction mode)" : "direct")
                + (hasStandby() ? ", " + standby.name().toLowerCase(Locale.ROOT) + " standby" : "");
    }
}
