package dev.fenceline.faults.check;

/** The properties the checker verifies ((a)–(i)) and the findings it reports without failing a run. */
public enum Check {
    A_TERMS_NEVER_GO_BACKWARDS("(a) batch terms never go backwards in commit order"),
    B_NO_STALE_COMMIT("(b) no batch committed with a term below the mark in force at its commit"),
    C_REJECTIONS_AUDITED("(c) every rejected attempt has its audit row"),
    D_EXACTLY_ONCE("(d) every payment settled exactly once, none lost, none twice"),
    E_LIVENESS("(e) after each heal a leader commits again within the bound"),
    F_SINGLE_VALID_LEADER("(f) no two workers LEADER with overlapping valid windows"),
    /** No write of the rogue writer (not a leader; stale, missing, invalid, over-jumped terms) ever commits. */
    G_ROGUE_REFUSED("(g) every rogue write refused by the fence, none committed"),
    /** Every refused rogue write has exactly one fencing.rejected_write row (matched by its leader_id). */
    H_ROGUE_AUDITED_ONCE("(h) every refused rogue write audited exactly once"),
    /** A flood of stale writers (and their audit connections) must not exhaust the server's connections. */
    I_NO_CONNECTION_EXHAUSTION("(i) no write refused for lack of connections"),
    /**
     * A worker process ended without the runner asking (not a fault's kill -9, not the runner's stop): workers must run
     * until told to stop, and a fleet that silently shrinks makes every later failover time meaningless.
     */
    WORKER_EXITED("(supervision) no worker exits on its own"),
    /**
     * Not a safety property: with the etcd member carrying the followers' watch streams hung, no successor became
     * leader within TTL + 1 s of the leader's death or freeze. A liveness finding, reported per injection.
     */
    SUCCESSION_SLOWER_THAN_BOUND("(liveness finding) no successor within TTL + 1 s while an etcd member hung"),
    /**
     * Not a safety property: two workers believed they were valid leaders at once during or after a stalled etcd
     * member (a slow disk or a hung process): etcd 3.4 may revoke a lease being renewed after a disk stall, and a
     * Raft leader resumed from a hang may confirm a renewal before it learns it was deposed. Reported; the database
     * fence must (and (b) checks that it does) keep the older term out.
     */
    ELECTION_OVERLAP_ETCD_STALL("(election finding) two workers valid at once around a stalled etcd member"),
    /**
     * Not a safety property: what (c) and (d) find missing that was acknowledged before a failover to an
     * <em>asynchronous</em> standby. Such a standby may lack the primary's last acknowledged commits; losing them is
     * the documented price of asynchronous replication, not a fencing violation, so it is counted apart and does not
     * fail a run. Anything missing that was acknowledged after the failover stays a (c)/(d) violation.
     */
    LOST_BY_ASYNC_FAILOVER("(d, durability) acknowledged commit lost by a failover to an asynchronous standby");

    /** Whether a finding of this check breaks a safety or liveness property (all but the asynchronous-failover loss). */
    public boolean isViolation() {
        return this != LOST_BY_ASYNC_FAILOVER && !isElectionFinding();
    }

    /** Findings about the election (liveness, validity overlaps) that are reported, not failed on. */
    public boolean isElectionFinding() {
        return this == SUCCESSION_SLOWER_THAN_BOUND || this == ELECTION_OVERLAP_ETCD_STALL;
    }

    private final String title;

    Check(String title) {
        this.title = title;
    }

    public String title() {
        return title;
    }
}
