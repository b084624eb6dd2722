package dev.fenceline.faults.check;

/** The properties the checker verifies (issue 6, (a)–(f)). */
public enum Check {
    A_TERMS_NEVER_GO_BACKWARDS("(a) batch terms never go backwards in commit order"),
    B_NO_STALE_COMMIT("(b) no batch committed with a term below the mark in force at its commit"),
    C_REJECTIONS_AUDITED("(c) every rejected attempt has its audit row"),
    D_EXACTLY_ONCE("(d) every payment settled exactly once, none lost, none twice"),
    E_LIVENESS("(e) after each heal a leader commits again within the bound"),
    F_SINGLE_VALID_LEADER("(f) no two workers LEADER with overlapping valid windows");

    private final String title;

    Check(String title) {
        this.title = title;
    }

    public String title() {
        return title;
    }
}
