package dev.fenceline.faults.history;

/**
 * One write of the rogue writer (an ordinary application login that is not a leader) to a protected table, as the
 * runner recorded it. Every such write must be refused by the fence and audited exactly once: {@code id} is what it
 * set as {@code fencing.leader_id}, so its audit row ({@code fencing.rejected_write.leader_id}) names it.
 *
 * @param variant     how it tried (stale term, no term, an invalid term, an over-jumped term, two-phase commit, after
 *                    {@code pg_advisory_unlock_all()}, into a partition, through a foreign-key cascade)
 * @param table       the table it wrote (for a cascade: the unprotected parent it changed; the cascade reaches the child)
 * @param offeredTerm the {@code fencing.term} it set, as text (null: none)
 * @param outcome     REJECTED: refused by the fence (SQLSTATE in {@link #FENCE_SQLSTATES}); COMMITTED: the database said
 *                    it committed; FAILED: another error before the fence decided (e.g. the server was down); UNKNOWN:
 *                    the connection was lost while it was under way
 * @param flood       part of an {@code auditFlood} (many stale writers at once)
 * @param faultIndex  the injection it belongs to
 */
public record RogueAttempt(
        String id,
        String variant,
        String table,
        String offeredTerm,
        long startMonoNs,
        long endMonoNs,
        Outcome outcome,
        String sqlState,
        String detail,
        boolean flood,
        int faultIndex) {
    /**
     * The fence's refusals (fencing.reject): FL001 stale term or term conflict, FL002 no term, FL003 invalid term,
     * FL007 break-glass refused, FL009 term jump, FL010 unscoped term, 42501 not a fencing_app member.
     */
    public static final java.util.Set<String> FENCE_SQLSTATES =
            java.util.Set.of("FL001", "FL002", "FL003", "FL007", "FL009", "FL010", "42501");
    /** Too many connections: the flood exhausted the server. */
    public static final String TOO_MANY_CONNECTIONS = "53300";

    public String describe() {
        return "rogue{id=" + id + ", variant=" + variant + ", table=" + table + ", term=" + offeredTerm + ", outcome="
                + outcome + (sqlState == null ? "" : ", sqlstate=" + sqlState) + ", fault #" + faultIndex + "}";
    }
}
