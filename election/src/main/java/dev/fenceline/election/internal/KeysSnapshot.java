package dev.fenceline.election.internal;

import dev.fenceline.election.ElectionKeys;
import dev.fenceline.election.LeaderRecord;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The parsed result of one linearizable range read of an election's keys (pure). */
final class KeysSnapshot {
    private static final Logger log = LoggerFactory.getLogger(KeysSnapshot.class);

    /** Null when the leader key is absent. */
    @Nullable
    StoredKey leader;
    /** Null when the leader key is absent or unreadable (an unreadable record counts as someone else's). */
    @Nullable
    LeaderRecord record;

    long term;
    long termModRevision;
    long floor;
    long floorModRevision;
    boolean paused;
    /** Null when the resign-request key is absent. */
    @Nullable
    StoredKey resignRequest;
    /** Term in the {@code resigned} marker: the last term given up voluntarily; -1 when absent or unreadable. */
    long resignedTerm = -1;
    /** {@link ClusterHistory} epoch when the read was sent. */
    long epoch;

    /** @throws IllegalArgumentException naming the key and the value when the term or the floor is unusable */
    static KeysSnapshot of(ElectionKeys keys, List<StoredKey> kvs) {
        KeysSnapshot s = new KeysSnapshot();
        for (StoredKey kv : kvs) {
            String key = kv.key();
            if (key.equals(keys.leader())) {
                s.leader = kv;
                try {
                    s.record = LeaderRecordCodec.decode(kv.value());
                } catch (IllegalArgumentException e) {
                    log.debug(
                            "leader record unreadable (treated as held by someone else): key={} problem=\"{}\"",
                            key,
                            e.getMessage());
                }
            } else if (key.equals(keys.term())) {
                s.term = parse(key, kv);
                s.termModRevision = kv.modRevision();
            } else if (key.equals(keys.termFloor())) {
                s.floor = parse(key, kv);
                s.floorModRevision = kv.modRevision();
            } else if (key.equals(keys.paused())) {
                s.paused = true;
            } else if (key.equals(keys.resignRequest())) {
                s.resignRequest = kv;
            } else if (key.equals(keys.resigned())) {
                try {
                    s.resignedTerm = Long.parseLong(kv.text().trim());
                } catch (NumberFormatException e) {
                    s.resignedTerm = -1; // unreadable marker: treat the absence as involuntary (the cautious reading)
                }
            }
        }
        return s;
    }

    /**
     * True when the leader key is absent and the last issued term was not given up voluntarily (no
     * {@code resigned} marker for it): its record went with an expired or revoked lease.
     */
    boolean leaderGoneInvoluntarily() {
        return leader == null && term > 0 && resignedTerm != term;
    }

    /** The term {@code request} (a resign request) targets; a blank or unparseable value targets whoever leads. */
    static long resignRequestTerm(StoredKey request, long current) {
        String v = request.text().trim();
        try {
            return v.isEmpty() ? current : Long.parseLong(v);
        } catch (NumberFormatException e) {
            return current;
        }
    }

    private static long parse(String key, StoredKey kv) {
        String v = kv.text().trim();
        try {
            long n = Long.parseLong(v);
            if (n < 0) {
                throw new IllegalArgumentException(key + " is negative: " + v);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " is not a decimal number: '" + v + "'");
        }
    }
}
