package dev.fenceline.election.internal;

import org.jspecify.annotations.Nullable;

/**
 * Known etcd server defects that weaken the election's guarantees (pure; unit-tested).
 *
 * <p><b>Lease revocation by a stale leader</b> (etcd issue 15247): an etcd leader stuck in a slow fdatasync or
 * starved of CPU keeps its lease clock running; when it recovers, before learning it was deposed, it revokes
 * every lease it did not see renewed, including leases renewed meanwhile through the new etcd leader. A
 * Fenceline leader then loses its record before its local deadline, and a successor can win while the old
 * leader still counts itself valid: only the resource fence decides. Fixed upstream by "ignore old leader's
 * leases revoking request": in 3.5.13 (etcd CHANGELOG-3.5, v3.5.13) and, backported to the 3.4 line after
 * 3.4.30 was out, in 3.4.31 (3.4 backport merged February 2024; 3.4.30 only fixed a nil-pointer panic). Every
 * earlier 3.x is affected; 3.6 and later carry the fix.
 */
final class EtcdVersions {
    private EtcdVersions() {}

    /** @param version etcd's server version as reported by maintenance status, e.g. {@code 3.4.23} */
    static boolean hasLeaseRevocationBug(@Nullable String version) {
        int[] v = parse(version);
        if (v == null) {
            return false; // unknown format: cannot tell, do not cry wolf (the open() log names the version)
        }
        if (v[0] != 3) {
            return v[0] < 3;
        }
        return switch (v[1]) {
            case 4 -> v[2] < 31;
            case 5 -> v[2] < 13;
            default -> v[1] < 4;
        };
    }

    /** major, minor, patch of {@code 3.4.23}, {@code v3.5.1}, {@code 3.4.23-rc.0}; null if not of that form. */
    static int @Nullable [] parse(@Nullable String version) {
        if (version == null) {
            return null;
        }
        String s = version.trim();
        if (s.startsWith("v")) {
            s = s.substring(1);
        }
        int dash = s.indexOf('-');
        if (dash >= 0) {
            s = s.substring(0, dash);
        }
        // -1 keeps trailing empty parts: only the first three are read, and an empty one fails as a missing one does
        String[] parts = s.split("\\.", -1);
        if (parts.length < 3) {
            return null;
        }
        try {
            return new int[] {Integer.parseInt(parts[0]), Integer.parseInt(parts[1]), Integer.parseInt(parts[2])};
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
