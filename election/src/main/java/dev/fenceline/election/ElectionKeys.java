package dev.fenceline.election;

import java.util.regex.Pattern;

/**
 * The documented etcd keys of one election, all under {@code <keyPrefix><election>/}:
 * <ul>
 *   <li>{@code leader}: JSON {@link LeaderRecord}, attached to the leader's lease (absent = no leader)</li>
 *   <li>{@code term}: decimal term counter, written by every winning campaign (never decreases)</li>
 *   <li>{@code term-floor}: optional decimal; the next term is at least this value</li>
 *   <li>{@code paused}: kill switch; while present the leader resigns and no candidate campaigns</li>
 *   <li>{@code resign-request}: decimal term; the leader holding that term resigns and deletes the key</li>
 *   <li>{@code resigned}: decimal term of the last leader that gave its term up voluntarily; written in the same
 *       guarded transaction that deletes its record, so a record that vanished without it (lease expiry or
 *       revocation) is told apart from a resign</li>
 * </ul>
 *
 * @param keyPrefix configured prefix, ends with '/'
 * @param election  election name: 1-128 characters of {@code [A-Za-z0-9._-]}
 */
public record ElectionKeys(String keyPrefix, String election) {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,128}");

    public ElectionKeys {
        requireValidName(election, "election name");
        if (keyPrefix == null || !keyPrefix.endsWith("/")) {
            throw new ElectionException("keyPrefix must end with '/', was: " + keyPrefix);
        }
    }

    public static ElectionKeys of(String keyPrefix, String election) {
        return new ElectionKeys(keyPrefix, election);
    }

    /** Throws an {@link ElectionException} naming {@code what} unless {@code name} matches {@code [A-Za-z0-9._-]{1,128}}. */
    public static String requireValidName(String name, String what) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new ElectionException(
                    what + " must match [A-Za-z0-9._-]{1,128}, was: " + (name == null ? "null" : "'" + name + "'"));
        }
        return name;
    }

    /** {@code <prefix><election>/}: a range read of this prefix returns exactly this election's keys. */
    public String root() {
        return keyPrefix + election + "/";
    }

    public String leader() {
        return root() + "leader";
    }

    public String term() {
        return root() + "term";
    }

    public String termFloor() {
        return root() + "term-floor";
    }

    public String paused() {
        return root() + "paused";
    }

    public String resignRequest() {
        return root() + "resign-request";
    }

    public String resigned() {
        return root() + "resigned";
    }
}
