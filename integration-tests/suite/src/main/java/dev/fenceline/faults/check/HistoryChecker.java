package dev.fenceline.faults.check;

import dev.fenceline.faults.history.BatchAttempt;
import dev.fenceline.faults.history.CommittedBatch;
import dev.fenceline.faults.history.FaultRecord;
import dev.fenceline.faults.history.History;
import dev.fenceline.faults.history.Outcome;
import dev.fenceline.faults.history.Payment;
import dev.fenceline.faults.history.RejectedWrite;
import dev.fenceline.faults.history.RogueAttempt;
import dev.fenceline.faults.history.StateChange;
import dev.fenceline.faults.history.TermMark;
import dev.fenceline.faults.history.ValidityWindow;
import dev.fenceline.faults.history.WorkerExit;
import dev.fenceline.faults.nemesis.Faults;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Judges a {@link History}: checks (a)–(i) (see {@link Check}). Pure logic, no I/O. Each violation says exactly which rows or
 * attempts break which property; {@link CheckResult#explain()} adds the seed.
 */
public final class HistoryChecker {
    private static final int MAX_REPORTED_PER_CHECK = 20;

    private final CheckerConfig config;

    public HistoryChecker(CheckerConfig config) {
        this.config = config;
    }

    public CheckResult check(History h) {
        List<Violation> out = new ArrayList<>();
        Map<Check, Integer> items = new EnumMap<>(Check.class);
        checkTermsMonotonic(h, out, items);
        checkNoStaleCommit(h, out, items);
        checkRejectionsAudited(h, out, items);
        checkExactlyOnce(h, out, items);
        List<FaultOutcome> outcomes = checkLiveness(h, out, items);
        long[] overlap = {0, 0, 0};
        boolean validity = checkSingleValidLeader(h, out, items, overlap);
        RogueSummary rogue = checkRogueWrites(h, out, items);
        checkWorkerExits(h, out, items);
        List<Violation> all = out;
        AsyncLoss loss = new AsyncLoss(count(all, LOST_PAYMENTS), count(all, LOST_BATCH), count(all, LOST_AUDIT_ROW));
        return new CheckResult(
                h.seed, capped(out), outcomes, overlap[0], overlap[1], validity, items, loss, overlap[2], rogue);
    }

    private static final String LOST_PAYMENTS = "inserted payment(s) missing";
    private static final String LOST_BATCH = "was reported committed";
    private static final String LOST_AUDIT_ROW = "was rejected but";

    /** How many items the LOST_BY_ASYNC_FAILOVER findings of one sort stand for (a payments finding counts its ids). */
    private static int count(List<Violation> all, String sort) {
        int n = 0;
        for (Violation v : all) {
            if (v.check() == Check.LOST_BY_ASYNC_FAILOVER && v.explanation().contains(sort)) {
                n += LOST_PAYMENTS.equals(sort)
                        ? Integer.parseInt(
                                v.explanation().substring(0, v.explanation().indexOf(' ')))
                        : 1;
            }
        }
        return n;
    }

    /** Keeps at most MAX_REPORTED_PER_CHECK violations per check, plus a line saying how many were left out. */
    private static List<Violation> capped(List<Violation> all) {
        Map<Check, Integer> seen = new EnumMap<>(Check.class);
        List<Violation> out = new ArrayList<>();
        for (Violation v : all) {
            int n = seen.merge(v.check(), 1, Integer::sum);
            if (n <= MAX_REPORTED_PER_CHECK) {
                out.add(v);
            }
        }
        seen.forEach((c, n) -> {
            if (n > MAX_REPORTED_PER_CHECK) {
                out.add(new Violation(c, "... and " + (n - MAX_REPORTED_PER_CHECK) + " more of this kind"));
            }
        });
        return out;
    }

    // (a) ---------------------------------------------------------------------------------------------------
    private void checkTermsMonotonic(History h, List<Violation> out, Map<Check, Integer> items) {
        CommittedBatch highest = null;
        for (CommittedBatch b : h.batchesInCommitOrder) {
            if (highest != null && b.term() < highest.term()) {
                out.add(new Violation(
                        Check.A_TERMS_NEVER_GO_BACKWARDS,
                        b.describe() + " committed after " + highest.describe() + ": term went back from "
                                + highest.term() + " to " + b.term()));
            }
            if (highest == null || b.term() > highest.term()) {
                highest = b;
            }
        }
        items.put(Check.A_TERMS_NEVER_GO_BACKWARDS, h.batchesInCommitOrder.size());
    }

    // (b) ---------------------------------------------------------------------------------------------------
    private void checkNoStaleCommit(History h, List<Violation> out, Map<Check, Integer> items) {
        List<TermMark> marks = new ArrayList<>();
        Set<Long> acceptedTerms = new HashSet<>();
        for (TermMark m : h.termMarks) {
            if (h.resource.equals(m.resource())) {
                marks.add(m);
                acceptedTerms.add(m.term());
            }
        }
        marks.sort(Comparator.comparing(TermMark::acceptedAt).thenComparingLong(TermMark::term));
        for (CommittedBatch b : h.batchesInCommitOrder) {
            if (!acceptedTerms.contains(b.term())) {
                out.add(new Violation(
                        Check.B_NO_STALE_COMMIT,
                        b.describe() + " carries term " + b.term()
                                + " which the fence never accepted (no term_history row for resource '" + h.resource
                                + "')"));
            }
            if (b.committedAt() == null) {
                continue;
            }
            Instant limit = b.committedAt().minus(config.markTimeAmbiguity());
            TermMark inForce = null;
            for (TermMark m : marks) {
                if (m.acceptedAt().isBefore(limit) && (inForce == null || m.term() > inForce.term())) {
                    inForce = m;
                }
            }
            if (inForce != null && inForce.term() > b.term()) {
                out.add(new Violation(
                        Check.B_NO_STALE_COMMIT,
                        b.describe() + " committed with term " + b.term()
                                + " but the mark was already " + inForce.term() + " (accepted " + inForce.acceptedAt()
                                + " for leader " + inForce.leaderId() + "): a stale write committed"));
            }
        }
        // The workers' view must agree with the database: an attempt told "rejected" must not have committed.
        Map<String, List<CommittedBatch>> byKey = batchesByKey(h);
        for (BatchAttempt a : h.attempts) {
            if (a.outcome() != Outcome.REJECTED || a.batchKey() == null) {
                continue;
            }
            for (CommittedBatch b : byKey.getOrDefault(a.batchKey(), List.of())) {
                if (b.term() == a.term() && sameLeader(b.leaderId(), a.worker())) {
                    out.add(new Violation(
                            Check.B_NO_STALE_COMMIT,
                            a.describe() + " was reported rejected, but the database committed it as " + b.describe()));
                }
            }
        }
        items.put(Check.B_NO_STALE_COMMIT, h.batchesInCommitOrder.size());
    }

    // (c) ---------------------------------------------------------------------------------------------------
    private void checkRejectionsAudited(History h, List<Violation> out, Map<Check, Integer> items) {
        List<RejectedWrite> unused = new ArrayList<>();
        for (RejectedWrite r : h.rejectedWrites) {
            if (r.resource() == null || h.resource.equals(r.resource())) {
                unused.add(r);
            }
        }
        int checked = 0;
        List<BatchAttempt> rejected = new ArrayList<>();
        for (BatchAttempt a : h.attempts) {
            if (a.outcome() == Outcome.REJECTED) {
                rejected.add(a);
            }
        }
        // Most specific first: business key + term, then leader + term, then an anonymous row with the term.
        List<BatchAttempt> unmatched = new ArrayList<>();
        for (BatchAttempt a : rejected) {
            checked++;
            if (!consume(unused, a, 0)) {
                unmatched.add(a);
            }
        }
        List<BatchAttempt> still = new ArrayList<>();
        for (BatchAttempt a : unmatched) {
            if (!consume(unused, a, 1) && !consume(unused, a, 2)) {
                still.add(a);
            }
        }
        for (BatchAttempt a : still) {
            String what = a.describe() + " was rejected but fencing.rejected_write has no row for offered_term "
                    + a.term() + " and leader " + a.worker();
            FaultRecord failover = asyncFailoverAfter(h, a.ended() ? a.endMonoNs() : a.startMonoNs());
            out.add(
                    failover == null
                            ? new Violation(Check.C_REJECTIONS_AUDITED, what)
                            : new Violation(Check.LOST_BY_ASYNC_FAILOVER, what + lostBy(failover)));
        }
        items.put(Check.C_REJECTIONS_AUDITED, checked);
    }

    private static boolean consume(List<RejectedWrite> rows, BatchAttempt a, int level) {
        for (int i = 0; i < rows.size(); i++) {
            RejectedWrite r = rows.get(i);
            if (r.offeredTerm() != a.term()) {
                continue;
            }
            boolean match = switch (level) {
                case 0 -> a.batchKey() != null && a.batchKey().equals(r.businessKey());
                case 1 -> r.leaderId() != null && sameLeader(r.leaderId(), a.worker());
                default -> r.leaderId() == null;
            };
            if (match) {
                rows.remove(i);
                return true;
            }
        }
        return false;
    }

    /** The leader id may be the worker id itself or the worker id with a suffix (e.g. "w1@host"). */
    static boolean sameLeader(String leaderId, String worker) {
        if (leaderId == null || worker == null) {
            return false;
        }
        return leaderId.equals(worker)
                || leaderId.startsWith(worker + "@")
                || leaderId.startsWith(worker + "/")
                || leaderId.startsWith(worker + ":");
    }

    // (d) ---------------------------------------------------------------------------------------------------
    private void checkExactlyOnce(History h, List<Violation> out, Map<Check, Integer> items) {
        Map<Long, Payment> payments = new HashMap<>();
        for (Payment p : h.payments) {
            payments.put(p.id(), p);
        }
        Map<Long, CommittedBatch> batches = new HashMap<>();
        for (CommittedBatch b : h.batchesInCommitOrder) {
            batches.put(b.id(), b);
        }
        // Inserts carry no time: with an asynchronous failover in the run, the missing ones are put down to the
        // failovers together, in one finding.
        FaultRecord anyAsyncFailover = asyncFailoverAfter(h, 0);
        List<Long> missing = new ArrayList<>();
        for (Long id : h.insertedPaymentIds) {
            if (!payments.containsKey(id)) {
                if (anyAsyncFailover == null) {
                    out.add(new Violation(
                            Check.D_EXACTLY_ONCE,
                            "payment " + id + " was inserted but is missing from the database (lost)"));
                } else {
                    missing.add(id);
                }
            }
        }
        if (!missing.isEmpty()) {
            out.add(new Violation(
                    Check.LOST_BY_ASYNC_FAILOVER,
                    missing.size() + " " + LOST_PAYMENTS
                            + " from the database (ids " + ranges(missing)
                            + "): inserts carry no time; the run failed over to "
                            + "an asynchronous standby (first: fault #" + anyAsyncFailover.index() + " "
                            + anyAsyncFailover.kind()
                            + "), which lost what the old primary had acknowledged last"));
        }
        Map<Long, Integer> referencing = new HashMap<>();
        Map<Long, Long> referencingCents = new HashMap<>();
        int settled = 0;
        for (Payment p : h.payments) {
            if (!p.settled()) {
                out.add(new Violation(
                        Check.D_EXACTLY_ONCE,
                        "payment " + p.id() + " is still " + p.status()
                                + " after healing and draining (lost: never settled)"));
                continue;
            }
            settled++;
            if (p.batchId() == null || !batches.containsKey(p.batchId())) {
                out.add(new Violation(
                        Check.D_EXACTLY_ONCE,
                        "payment " + p.id() + " is SETTLED by batch " + p.batchId()
                                + " which does not exist (lost settlement)"));
                continue;
            }
            referencing.merge(p.batchId(), 1, Integer::sum);
            referencingCents.merge(p.batchId(), p.amountCents(), Long::sum);
        }
        long claimed = 0;
        for (CommittedBatch b : h.batchesInCommitOrder) {
            claimed += b.paymentCount();
            int refs = referencing.getOrDefault(b.id(), 0);
            long cents = referencingCents.getOrDefault(b.id(), 0L);
            if (refs != b.paymentCount()) {
                out.add(new Violation(
                        Check.D_EXACTLY_ONCE,
                        b.describe() + " says it settled " + b.paymentCount()
                                + " payment(s) but " + refs + " payment row(s) reference it"
                                + (refs < b.paymentCount()
                                        ? " (payments settled twice: re-settled by another batch)"
                                        : " (payments attributed to a batch that does not count them)")));
            } else if (cents != b.totalCents()) {
                out.add(new Violation(
                        Check.D_EXACTLY_ONCE,
                        b.describe() + " says total " + b.totalCents() + " cents but its payments sum to " + cents));
            }
        }
        if (claimed != settled) {
            out.add(new Violation(
                    Check.D_EXACTLY_ONCE,
                    "batches claim " + claimed + " settled payment(s) but " + settled + " payment(s) are SETTLED"
                            + (claimed > settled ? " (some were settled twice)" : "")));
        }
        // A worker told "committed" must find its batch in the database.
        Map<String, List<CommittedBatch>> byKey = batchesByKey(h);
        for (BatchAttempt a : h.attempts) {
            if (a.outcome() != Outcome.COMMITTED || a.batchKey() == null) {
                continue;
            }
            boolean found = false;
            for (CommittedBatch b : byKey.getOrDefault(a.batchKey(), List.of())) {
                if (b.term() == a.term()) {
                    found = true;
                    break;
                }
            }
            if (!found) {
                String what = a.describe()
                        + " was reported committed but the database has no batch with that key and term (lost commit)";
                FaultRecord failover = asyncFailoverAfter(h, a.endMonoNs());
                out.add(
                        failover == null
                                ? new Violation(Check.D_EXACTLY_ONCE, what)
                                : new Violation(Check.LOST_BY_ASYNC_FAILOVER, what + lostBy(failover)));
            }
        }
        items.put(Check.D_EXACTLY_ONCE, h.payments.size());
    }

    /**
     * The first failover to an asynchronous standby injected after {@code monoNs} (when something acknowledged at
     * {@code monoNs} may have been lost with the old primary), or null: no asynchronous standby, or none after it.
     */
    static FaultRecord asyncFailoverAfter(History h, long monoNs) {
        if (!h.asynchronousStandby || monoNs < 0) {
            return null;
        }
        FaultRecord first = null;
        for (FaultRecord f : h.faults) {
            if (FAILOVER_KIND.equals(f.kind())
                    && f.injectMonoNs() > monoNs
                    && (first == null || f.injectMonoNs() < first.injectMonoNs())) {
                first = f;
            }
        }
        return first;
    }

    /** "3-5, 9" for [3, 4, 5, 9]. */
    static String ranges(List<Long> ids) {
        List<Long> sorted = new ArrayList<>(ids);
        sorted.sort(null);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < sorted.size(); i++) {
            int j = i;
            while (j + 1 < sorted.size() && sorted.get(j + 1) == sorted.get(j) + 1) {
                j++;
            }
            sb.append(sb.length() == 0 ? "" : ", ").append(sorted.get(i)).append(j > i ? "-" + sorted.get(j) : "");
            i = j;
        }
        return sb.toString();
    }

    private static String lostBy(FaultRecord failover) {
        return ": acknowledged before fault #" + failover.index() + " " + failover.kind() + " (asynchronous standby) "
                + "and lost with the old primary";
    }

    private static Map<String, List<CommittedBatch>> batchesByKey(History h) {
        Map<String, List<CommittedBatch>> byKey = new HashMap<>();
        for (CommittedBatch b : h.batchesInCommitOrder) {
            if (b.idempotencyKey() != null) {
                byKey.computeIfAbsent(b.idempotencyKey(), k -> new ArrayList<>())
                        .add(b);
            }
        }
        return byKey;
    }

    // (e) ---------------------------------------------------------------------------------------------------
    private List<FaultOutcome> checkLiveness(History h, List<Violation> out, Map<Check, Integer> items) {
        List<BatchAttempt> commits = new ArrayList<>();
        List<BatchAttempt> rejections = new ArrayList<>();
        for (BatchAttempt a : h.attempts) {
            if (a.outcome() == Outcome.COMMITTED && a.ended()) {
                commits.add(a);
            } else if (a.outcome() == Outcome.REJECTED) {
                rejections.add(a);
            }
        }
        commits.sort(Comparator.comparingLong(BatchAttempt::endMonoNs));
        List<FaultRecord> faults = new ArrayList<>(h.faults);
        faults.sort(Comparator.comparingLong(FaultRecord::injectMonoNs));
        long bound = config.livenessBound().toNanos();
        List<FaultOutcome> outcomes = new ArrayList<>();
        for (int i = 0; i < faults.size(); i++) {
            FaultRecord f = faults.get(i);
            long windowEnd = i + 1 < faults.size() ? faults.get(i + 1).injectMonoNs() : Long.MAX_VALUE;
            long recovery = -1;
            long failover = -1;
            for (BatchAttempt c : commits) {
                if (recovery < 0 && f.healMonoNs() >= 0 && c.endMonoNs() > f.healMonoNs()) {
                    recovery = c.endMonoNs() - f.healMonoNs();
                }
                if (failover < 0
                        && c.endMonoNs() > f.injectMonoNs()
                        && c.endMonoNs() < windowEnd
                        && c.term() > f.markAtInjection()) {
                    failover = c.endMonoNs() - f.injectMonoNs();
                }
                if (recovery >= 0 && failover >= 0) {
                    break;
                }
            }
            int committed = 0;
            for (BatchAttempt c : commits) {
                if (c.endMonoNs() >= f.injectMonoNs() && c.endMonoNs() < windowEnd) {
                    committed++;
                }
            }
            int rejected = 0;
            for (BatchAttempt r : rejections) {
                long t = r.ended() ? r.endMonoNs() : r.startMonoNs();
                if (t >= f.injectMonoNs() && t < windowEnd) {
                    rejected++;
                }
            }
            if (f.healMonoNs() < 0) {
                out.add(new Violation(
                        Check.E_LIVENESS,
                        "fault #" + f.index() + " " + f.kind() + " on " + f.target() + " was never healed"));
            } else if (recovery < 0) {
                out.add(new Violation(
                        Check.E_LIVENESS,
                        "after healing fault #" + f.index() + " " + f.kind() + " on " + f.target()
                                + " no leader committed a batch at all (bound " + config.livenessBound() + ")"));
            } else if (recovery > bound) {
                out.add(new Violation(
                        Check.E_LIVENESS,
                        "after healing fault #" + f.index() + " " + f.kind() + " on "
                                + f.target() + " the first commit came after "
                                + Duration.ofNanos(recovery).toMillis()
                                + " ms, above the bound "
                                + config.livenessBound().toMillis() + " ms"));
            }
            long successor = successor(h, f, windowEnd);
            if (HUNG_MEMBER_KIND.equals(f.kind())
                    && (successor < 0 || successor > config.successionBound().toNanos())) {
                out.add(new Violation(
                        Check.SUCCESSION_SLOWER_THAN_BOUND,
                        "fault #" + f.index() + " " + f.kind() + " on "
                                + f.target() + ": "
                                + (successor < 0
                                        ? "no successor became leader before the next injection"
                                        : "the successor became leader after "
                                                + Duration.ofNanos(successor).toMillis() + " ms")
                                + ", above the bound TTL + 1 s = "
                                + config.successionBound().toMillis() + " ms"));
            }
            outcomes.add(new FaultOutcome(f, recovery, failover, committed, rejected, successor));
        }
        items.put(Check.E_LIVENESS, faults.size());
        return outcomes;
    }

    /**
     * Injection → the first worker state LEADER with a term above every term led before the injection and above
     * the mark at injection, before {@code windowEnd}, by a worker other than the one the fault hit; -1 if none. The
     * faulted worker winning again after the heal is no successor: counting it would report the fault's hold time as
     * a failover when no other worker is left to take over.
     */
    private static long successor(History h, FaultRecord f, long windowEnd) {
        String faulted = f.worker();
        long before = f.markAtInjection();
        for (StateChange sc : h.stateChanges) {
            if ("LEADER".equals(sc.state()) && sc.monoNs() <= f.injectMonoNs()) {
                before = Math.max(before, sc.term());
            }
        }
        long first = -1;
        for (StateChange sc : h.stateChanges) {
            if ("LEADER".equals(sc.state())
                    && sc.term() > before
                    && sc.monoNs() > f.injectMonoNs()
                    && sc.monoNs() < windowEnd
                    && !sc.worker().equals(faulted)
                    && (first < 0 || sc.monoNs() < first)) {
                first = sc.monoNs();
            }
        }
        return first < 0 ? -1 : first - f.injectMonoNs();
    }

    // (g), (h), (i) -----------------------------------------------------------------------------------------
    /**
     * The rogue writer is no leader: every write it tries must be refused by the fence (no committed rogue row, no
     * attempt told "committed"), every refused one audited exactly once (its audit row names it by leader_id), no
     * audit row may name a rogue write that was never tried, and none may fail for lack of connections.
     */
    private RogueSummary checkRogueWrites(History h, List<Violation> out, Map<Check, Integer> items) {
        Map<String, Integer> auditRows = new HashMap<>();
        for (RejectedWrite r : h.rejectedWrites) {
            if (r.leaderId() != null && r.leaderId().startsWith(ROGUE_PREFIX)) {
                auditRows.merge(r.leaderId(), 1, Integer::sum);
            }
        }
        int refused = 0;
        int audited = 0;
        int committed = h.rogueRowsCommitted.size();
        int failed = 0;
        Set<String> tried = new HashSet<>();
        for (RogueAttempt a : h.rogueAttempts) {
            tried.add(a.id());
            int rows = auditRows.getOrDefault(a.id(), 0);
            switch (a.outcome()) {
                case COMMITTED -> {
                    committed++;
                    out.add(new Violation(
                            Check.G_ROGUE_REFUSED,
                            a.describe() + " was told it committed: a write without a valid term got past the fence",
                            a.faultIndex()));
                }
                case REJECTED -> {
                    refused++;
                    if (rows == 1) {
                        audited++;
                    } else if (rows == 0) {
                        FaultRecord failover = asyncFailoverAfter(h, a.endMonoNs());
                        String what = a.describe()
                                + " was refused but fencing.rejected_write has no row with leader_id " + a.id();
                        out.add(
                                failover == null
                                        ? new Violation(Check.H_ROGUE_AUDITED_ONCE, what, a.faultIndex())
                                        : new Violation(
                                                Check.LOST_BY_ASYNC_FAILOVER, what + lostBy(failover), a.faultIndex()));
                    } else {
                        out.add(new Violation(
                                Check.H_ROGUE_AUDITED_ONCE,
                                a.describe() + " was refused once but audited " + rows + " times",
                                a.faultIndex()));
                    }
                }
                default -> {
                    failed++;
                    if (rows > 1) {
                        out.add(new Violation(
                                Check.H_ROGUE_AUDITED_ONCE,
                                a.describe() + " was audited " + rows + " times",
                                a.faultIndex()));
                    }
                }
            }
            if (RogueAttempt.TOO_MANY_CONNECTIONS.equals(a.sqlState())) {
                out.add(new Violation(
                        Check.I_NO_CONNECTION_EXHAUSTION,
                        a.describe()
                                + " could not get a connection: too many clients (the audit or the flood exhausted the server)",
                        a.faultIndex()));
            }
        }
        for (String row : h.rogueRowsCommitted) {
            out.add(new Violation(Check.G_ROGUE_REFUSED, "a rogue write committed: " + row));
        }
        auditRows.forEach((id, n) -> {
            if (!tried.contains(id)) {
                out.add(new Violation(
                        Check.H_ROGUE_AUDITED_ONCE,
                        n + " audit row(s) name rogue write " + id + ", which the rogue writer never tried"));
            }
        });
        items.put(Check.G_ROGUE_REFUSED, h.rogueAttempts.size());
        items.put(Check.H_ROGUE_AUDITED_ONCE, refused);
        items.put(Check.I_NO_CONNECTION_EXHAUSTION, h.rogueAttempts.size());
        return new RogueSummary(h.rogueAttempts.size(), refused, audited, committed, failed);
    }

    // supervision ---------------------------------------------------------------------------------------------
    /** Every worker exit the runner did not cause is a violation, with its code, time and the end of its log. */
    private static void checkWorkerExits(History h, List<Violation> out, Map<Check, Integer> items) {
        for (WorkerExit e : h.workerExits) {
            out.add(new Violation(
                    Check.WORKER_EXITED,
                    "worker " + e.worker() + " exited with code " + e.exitCode() + " at "
                            + e.at() + " (not a fault's kill, not the runner's stop; restarted), last log lines:\n"
                            + e.lastLogLines().strip()));
        }
        items.put(Check.WORKER_EXITED, h.workerExits.size());
    }

    // (f) ---------------------------------------------------------------------------------------------------
    /**
     * Two workers may not both be validly leader at the same instant. A coordinator rebuilt from nothing cannot know
     * the old leader (its lease vanished with the data), so windows on either side of a coordinatorRebuilt
     * injection are not compared: that overlap is expected, the database fence covers it, and it is reported
     * separately ({@link CheckResult#crossRebuildOverlapNs()}).
     */
    private boolean checkSingleValidLeader(
            History h, List<Violation> out, Map<Check, Integer> items, long[] overlapOut) {
        items.put(Check.F_SINGLE_VALID_LEADER, h.validityWindows.size());
        if (h.validityWindows.isEmpty()) {
            boolean hadLeaders = h.stateChanges.stream().anyMatch(s -> "LEADER".equals(s.state()));
            if (hadLeaders && config.requireValidityWindows()) {
                out.add(new Violation(
                        Check.F_SINGLE_VALID_LEADER,
                        "workers were LEADER but recorded no validity windows; the property cannot be checked"));
            }
            return false;
        }
        List<Long> rebuilds = new ArrayList<>();
        for (FaultRecord f : h.faults) {
            if (REBUILD_KIND.equals(f.kind())) {
                rebuilds.add(f.injectMonoNs());
            }
        }
        rebuilds.sort(null);
        List<long[]> stalls = new ArrayList<>();
        for (FaultRecord f : h.faults) {
            if (SLOW_DISK_KIND.equals(f.kind()) || HUNG_MEMBER_KIND.equals(f.kind())) {
                long healed = f.healMonoNs() < 0
                        ? Long.MAX_VALUE
                        : f.healMonoNs() + config.etcdStallAftermath().toNanos();
                stalls.add(new long[] {f.injectMonoNs(), healed, f.index()});
            }
        }
        // A claim counts only while the worker's own state log says LEADER (SUSPECT, LOST, FOLLOWER... end it), and
        // belongs to the coordinator epoch in which that leadership (worker, term, lease) was acquired.
        Map<String, List<StateChange>> states = new HashMap<>();
        for (StateChange sc : h.stateChanges) {
            states.computeIfAbsent(sc.worker(), k -> new ArrayList<>()).add(sc);
        }
        states.values().forEach(l -> l.sort(Comparator.comparingLong(StateChange::monoNs)));
        Map<String, List<long[]>> unions = new TreeMap<>();
        Map<String, List<long[]>> perKey = new TreeMap<>();
        int counted = 0;
        for (ValidityWindow v : h.validityWindows) {
            long from = v.effectiveFrom();
            long until = v.untilMonoNs();
            long acquired = v.recordedMonoNs();
            List<StateChange> log = states.get(v.worker());
            if (log != null && !log.isEmpty()) {
                StateChange current = null;
                StateChange next = null;
                for (StateChange sc : log) {
                    if (sc.monoNs() <= v.recordedMonoNs()) {
                        current = sc;
                    } else if (!"LEADER".equals(sc.state())) {
                        next = sc;
                        break;
                    }
                }
                if (current == null || !"LEADER".equals(current.state()) || current.term() != v.term()) {
                    continue; // not LEADER when it was said: e.g. the deadline re-stated on SUSPECT or LOST
                }
                if (next != null) {
                    until = Math.min(until, next.monoNs());
                }
                for (StateChange sc : log) {
                    if ("LEADER".equals(sc.state()) && sc.term() == current.term() && sc.lease() == current.lease()) {
                        acquired = sc.monoNs();
                        break;
                    }
                }
            }
            if (until <= from) {
                continue;
            }
            counted++;
            long epoch = epochOf(rebuilds, acquired);
            perKey.computeIfAbsent(v.worker() + "\u0000" + epoch, k -> new ArrayList<>())
                    .add(new long[] {from, until, v.term(), epoch});
        }
        items.put(Check.F_SINGLE_VALID_LEADER, counted);
        perKey.forEach((key, list) -> {
            list.sort(Comparator.comparingLong(a -> a[0]));
            List<long[]> merged = new ArrayList<>();
            for (long[] iv : list) {
                long[] last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
                if (last != null && iv[0] <= last[1] && iv[2] == last[2]) {
                    last[1] = Math.max(last[1], iv[1]);
                } else {
                    merged.add(iv.clone());
                }
            }
            unions.put(key, merged);
        });
        List<String> keys = new ArrayList<>(unions.keySet());
        long total = 0;
        long crossRebuild = 0;
        long stalled = 0;
        for (int i = 0; i < keys.size(); i++) {
            String wi = keys.get(i).substring(0, keys.get(i).indexOf('\u0000'));
            for (int j = i + 1; j < keys.size(); j++) {
                String wj = keys.get(j).substring(0, keys.get(j).indexOf('\u0000'));
                if (wi.equals(wj)) {
                    continue;
                }
                for (long[] x : unions.get(keys.get(i))) {
                    for (long[] y : unions.get(keys.get(j))) {
                        long from = Math.max(x[0], y[0]);
                        long until = Math.min(x[1], y[1]);
                        if (until <= from) {
                            continue;
                        }
                        if (x[3] != y[3]) {
                            crossRebuild += until - from;
                            continue;
                        }
                        long[] disk = overlapping(stalls, from, until);
                        if (disk != null) {
                            stalled += until - from;
                            out.add(new Violation(
                                    Check.ELECTION_OVERLAP_ETCD_STALL,
                                    wi + " (term " + x[2] + ") and " + wj
                                            + " (term " + y[2] + ") both believed they were valid leaders for "
                                            + String.format(java.util.Locale.ROOT, "%.3f", (until - from) / 1e6)
                                            + " ms (monotonic " + from + ".." + until + " ns), during or after fault #"
                                            + disk[2]
                                            + " " + kindOf(h, (int) disk[2])
                                            + " (a stalled etcd member; etcd 3.4 can confirm "
                                            + "or revoke leases wrongly around such stalls)"));
                            continue;
                        }
                        total += until - from;
                        out.add(new Violation(
                                Check.F_SINGLE_VALID_LEADER,
                                wi + " (term " + x[2] + ") and " + wj
                                        + " (term " + y[2] + ") were both validly LEADER for "
                                        + String.format(java.util.Locale.ROOT, "%.3f", (until - from) / 1e6)
                                        + " ms (monotonic " + from + ".." + until + " ns)"));
                    }
                }
            }
        }
        overlapOut[0] = total;
        overlapOut[1] = crossRebuild;
        overlapOut[2] = stalled;
        return true;
    }

    private static String kindOf(History h, int index) {
        return h.faults.stream()
                .filter(f -> f.index() == index)
                .map(FaultRecord::kind)
                .findFirst()
                .orElse("?");
    }

    /** The stall window (inject .. heal + aftermath, index) that [from, until) overlaps, or null. */
    private static long[] overlapping(List<long[]> windows, long from, long until) {
        for (long[] w : windows) {
            if (from < w[1] && until > w[0]) {
                return w;
            }
        }
        return null;
    }

    /** The kind name of the coordinator-rebuild fault (windows are not compared across it). */
    public static final String REBUILD_KIND = Faults.COORDINATOR_REBUILT;
    /** The hung etcd member: its succession time is held against {@link CheckerConfig#successionBound()}. */
    static final String HUNG_MEMBER_KIND = Faults.HUNG_ETCD_MEMBER;
    /** The slow etcd disk: validity overlaps around it (and a hung member) are reported apart ({@link Check#ELECTION_OVERLAP_ETCD_STALL}). */
    static final String SLOW_DISK_KIND = Faults.SLOW_ETCD_DISK;
    /** Every rogue write's leader_id starts with this (so its audit row can be told from a worker's). */
    public static final String ROGUE_PREFIX = "rogue-";
    /** The kind name of the PostgreSQL failover (with an asynchronous standby, acknowledged commits may be lost). */
    static final String FAILOVER_KIND = Faults.POSTGRES_FAILOVER;

    private static long epochOf(List<Long> rebuilds, long t) {
        long e = 0;
        for (long r : rebuilds) {
            if (t >= r) {
                e++;
            }
        }
        return e;
    }
}
