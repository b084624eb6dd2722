package dev.fenceline.election.internal;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** One key as etcd returned it, without client-library types (what the decision needs of it). */
record StoredKey(String key, long modRevision, long lease, byte[] value) {
    String text() {
        return new String(value, StandardCharsets.UTF_8);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoredKey k
                && k.key.equals(key)
                && k.modRevision == modRevision
                && k.lease == lease
                && Arrays.equals(k.value, value);
    }

    @Override
    public int hashCode() {
        return key.hashCode() * 31 + Long.hashCode(modRevision);
    }

    @Override
    public String toString() {
        return key + "@" + modRevision + (lease != 0 ? " lease " + lease : "");
    }
}
