package dev.fenceline.task;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.fencing.FencedWriter;
import dev.fenceline.fencing.UnknownResourceException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The bridge between the election's term counter and the database's mark, so that a coordinator that lost its
 * history (rebuilt from nothing, restored from an old snapshot) cannot hand out a term PostgreSQL already accepted:
 * before campaigning and after a conflict the election's term floor is raised above the mark; a won term is usable
 * only above the mark, or equal to it when this task itself presented that term (it may have advanced the mark to
 * it). The decisions are {@link TaskDecision#floorAbove} and {@link TaskDecision#termUsable}; this class does the
 * reads and the write they need, and nothing else (the task notifies listeners and meters).
 */
final class TermFloor {
    /** A floor raised: the mark read, the election's term then, and the floor now in force. */
    record Raised(long databaseMark, long electionTerm, long floorInForce) {}

    private final FencedWriter writer;
    private final String resource;
    private final String electionName;
    /** Terms this task has presented to PostgreSQL (it may have advanced the mark to them). */
    private final Set<Long> presented = ConcurrentHashMap.newKeySet();

    TermFloor(FencedWriter writer, String resource, String electionName) {
        this.writer = writer;
        this.resource = resource;
        this.electionName = electionName;
    }

    /** The database's mark for the resource, 0 when the resource has none yet. */
    long databaseMark() {
        try {
            return writer.highestAccepted(resource);
        } catch (UnknownResourceException e) {
            return 0;
        }
    }

    /**
     * Raises the election's term floor above the database's mark (the higher of {@code knownMark} and a fresh
     * read) when the election's counter is not above it; returns what was raised, or null when nothing had to be.
     */
    @Nullable
    Raised raise(ElectionAdmin admin, long knownMark) {
        long mark = Math.max(knownMark, databaseMark());
        long electionTerm = mark <= 0 ? 0 : admin.currentTerm(electionName);
        long floor = TaskDecision.floorAbove(mark, electionTerm);
        if (floor <= 0) {
            return null;
        }
        return new Raised(mark, electionTerm, admin.ensureTermAtLeast(electionName, floor));
    }

    /** Records that a run is about to present {@code term} to PostgreSQL. */
    void presenting(long term) {
        presented.add(term);
    }

    /** True when {@code term} may write against a database whose mark is {@code databaseMark}. */
    boolean usable(long term, long databaseMark) {
        return TaskDecision.termUsable(term, databaseMark, presented.contains(term));
    }
}
