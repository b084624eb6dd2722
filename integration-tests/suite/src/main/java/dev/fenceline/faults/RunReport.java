package dev.fenceline.faults;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.fenceline.faults.check.Check;
import dev.fenceline.faults.check.CheckResult;
import dev.fenceline.faults.check.FaultOutcome;
import dev.fenceline.faults.check.Violation;
import dev.fenceline.faults.history.History;
import dev.fenceline.faults.history.Outcome;
import dev.fenceline.faults.history.RogueAttempt;
import dev.fenceline.faults.workload.RunConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The run's report: a table per fault kind (printed) and the same plus details as JSON. */
public final class RunReport {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** One row of the table. Times in milliseconds; -1 when there is no sample. */
    public record Row(
            String kind,
            int injections,
            int takeoversDuringFault,
            int batchesCommitted,
            int staleRejected,
            int violations,
            long failoverP50,
            long failoverP99,
            long failoverMax,
            int failoverSamples,
            long recoveryP50,
            long recoveryP99,
            long recoveryMax,
            long successorP50,
            long successorP99,
            long successorMax,
            int successorSamples,
            int electionFindings,
            int rogueAttempts,
            int rogueRefused,
            int rogueAudited) {}

    public final long seed;
    public final CheckResult result;
    public final List<Row> rows;
    public final Map<String, Object> totals;
    public final List<String> skippedKinds;
    /** Why a skipped kind could not run here, where known. */
    public final Map<String, String> skipNotes;

    public final List<Map<String, Object>> faults;
    /** What the run recorded, for the HTML timeline ({@link HtmlReport}); not part of the JSON. */
    final History history;

    private RunReport(
            long seed,
            CheckResult result,
            List<Row> rows,
            Map<String, Object> totals,
            List<String> skipped,
            Map<String, String> skipNotes,
            List<Map<String, Object>> faults,
            History history) {
        this.skipNotes = Map.copyOf(skipNotes);
        this.history = history;
        this.seed = seed;
        this.result = result;
        this.rows = rows;
        this.totals = totals;
        this.skippedKinds = skipped;
        this.faults = faults;
    }

    public static RunReport of(
            RunConfig cfg,
            History h,
            CheckResult r,
            List<String> skipped,
            int unreadableLines,
            Duration elapsed,
            Path runDir) {
        return of(cfg, h, r, skipped, Map.of(), unreadableLines, elapsed, runDir);
    }

    public static RunReport of(
            RunConfig cfg,
            History h,
            CheckResult r,
            List<String> skipped,
            Map<String, String> skipNotes,
            int unreadableLines,
            Duration elapsed,
            Path runDir) {
        // Rogue writes per injection, and how many audit rows name each one.
        Map<String, Integer> auditRows = new LinkedHashMap<>();
        for (var w : h.rejectedWrites) {
            if (w.leaderId() != null
                    && w.leaderId().startsWith(dev.fenceline.faults.check.HistoryChecker.ROGUE_PREFIX)) {
                auditRows.merge(w.leaderId(), 1, Integer::sum);
            }
        }
        Map<Integer, int[]> roguePerFault = new LinkedHashMap<>();
        for (RogueAttempt a : h.rogueAttempts) {
            int[] c = roguePerFault.computeIfAbsent(a.faultIndex(), k -> new int[3]);
            c[0]++;
            if (a.outcome() == Outcome.REJECTED) {
                c[1]++;
                if (auditRows.getOrDefault(a.id(), 0) == 1) {
                    c[2]++;
                }
            }
        }
        Map<String, List<FaultOutcome>> byKind = new LinkedHashMap<>();
        for (String k : cfg.kinds()) {
            byKind.put(k, new ArrayList<>());
        }
        for (FaultOutcome o : r.faultOutcomes()) {
            byKind.computeIfAbsent(o.fault().kind(), k -> new ArrayList<>()).add(o);
        }
        List<Row> rows = new ArrayList<>();
        for (Map.Entry<String, List<FaultOutcome>> e : byKind.entrySet()) {
            List<Long> rec = new ArrayList<>();
            List<Long> fo = new ArrayList<>();
            int committed = 0;
            int rejected = 0;
            int violations = 0;
            int takeovers = 0;
            List<Long> succ = new ArrayList<>();
            int findings = 0;
            int[] rogue = new int[3];
            for (FaultOutcome o : e.getValue()) {
                if (o.successorNs() >= 0) {
                    succ.add(o.successorNs() / 1_000_000);
                }
                int[] rc = roguePerFault.getOrDefault(o.fault().index(), new int[3]);
                for (int i = 0; i < 3; i++) {
                    rogue[i] += rc[i];
                }
                for (Violation v : r.electionFindings()) {
                    if (v.concerns(o.fault().index(), o.fault().kind())) {
                        findings++;
                    }
                }
                long held = o.fault().healMonoNs() - o.fault().injectMonoNs();
                if (o.failoverNs() >= 0 && o.failoverNs() < held) {
                    takeovers++;
                }
                if (o.recoveryNs() >= 0) {
                    rec.add(o.recoveryNs() / 1_000_000);
                }
                if (o.failoverNs() >= 0) {
                    fo.add(o.failoverNs() / 1_000_000);
                }
                committed += o.committed();
                rejected += o.rejected();
                // rogue writes' violations carry their injection's index; the others name it in their text
                for (Violation v : r.safetyViolations()) {
                    if (v.concerns(o.fault().index(), o.fault().kind())) {
                        violations++;
                    }
                }
            }
            rows.add(new Row(
                    e.getKey(),
                    e.getValue().size(),
                    takeovers,
                    committed,
                    rejected,
                    violations,
                    pct(fo, 50),
                    pct(fo, 99),
                    pct(fo, 100),
                    fo.size(),
                    pct(rec, 50),
                    pct(rec, 99),
                    pct(rec, 100),
                    pct(succ, 50),
                    pct(succ, 99),
                    pct(succ, 100),
                    succ.size(),
                    findings,
                    rogue[0],
                    rogue[1],
                    rogue[2]));
        }
        Map<String, Object> totals = new LinkedHashMap<>();
        totals.put("seed", cfg.seed());
        totals.put("mode", cfg.rounds() > 0 ? "smoke" : "soak");
        totals.put("elapsed_s", elapsed.toSeconds());
        totals.put("ttl_ms", cfg.ttl().toMillis());
        totals.put(
                "liveness_bound_ms",
                dev.fenceline.faults.check.CheckerConfig.forTtl(cfg.ttl())
                        .livenessBound()
                        .toMillis());
        totals.put("workers", cfg.workers());
        totals.put("injections", r.faultOutcomes().size());
        totals.put("payments", h.payments.size());
        totals.put("payments_inserted_by_run", h.insertedPaymentIds.size());
        totals.put(
                "payments_settled", h.payments.stream().filter(p -> p.settled()).count());
        totals.put("batches_committed_db", h.batchesInCommitOrder.size());
        totals.put("terms_accepted", h.termMarks.size());
        totals.put("rejected_write_rows", h.rejectedWrites.size());
        Map<String, Long> outcomes = new LinkedHashMap<>();
        for (Outcome o : Outcome.values()) {
            outcomes.put(
                    o.name().toLowerCase(Locale.ROOT),
                    h.attempts.stream().filter(a -> a.outcome() == o).count());
        }
        totals.put("attempt_outcomes", outcomes);
        totals.put("postgres", cfg.postgres().toString());
        totals.put("etcd_server_version", h.etcdServerVersion);
        totals.put(
                "succession_bound_ms",
                dev.fenceline.faults.check.CheckerConfig.forTtl(cfg.ttl())
                        .successionBound()
                        .toMillis());
        Map<String, Integer> rogue = new LinkedHashMap<>();
        rogue.put("attempts", r.rogue().attempts());
        rogue.put("refused", r.rogue().refused());
        rogue.put("audited_once", r.rogue().audited());
        rogue.put("committed", r.rogue().committed());
        rogue.put("failed_or_unknown", r.rogue().failed());
        rogue.put("flood_attempts", (int)
                h.rogueAttempts.stream().filter(RogueAttempt::flood).count());
        totals.put("rogue_writes", rogue);
        totals.put("violations", r.safetyViolations().size());
        Map<String, Integer> lost = new LinkedHashMap<>();
        lost.put("payments", r.asyncLoss().payments());
        lost.put("batches", r.asyncLoss().batches());
        lost.put("audit_rows", r.asyncLoss().auditRows());
        totals.put("lost_acknowledged_by_async_failover", lost);
        Map<String, Integer> perCheck = new LinkedHashMap<>();
        for (Check c : Check.values()) {
            perCheck.put(c.name(), r.violations(c).size());
        }
        totals.put("violations_per_check", perCheck);
        totals.put("successor_ms_by_stopped_etcd_member", successorsByStoppedMember(r.faultOutcomes()));
        totals.put("leader_overlap_ns", r.leaderOverlapNs());
        totals.put("leader_overlap_across_coordinator_rebuild_ns", r.crossRebuildOverlapNs());
        totals.put("leader_overlap_around_etcd_stall_ns", r.etcdStallOverlapNs());
        totals.put("election_findings", r.electionFindings().size());
        totals.put("skip_notes", skipNotes);
        totals.put("validity_windows_recorded", h.validityWindows.size());
        totals.put("unreadable_history_lines", unreadableLines);
        totals.put("run_dir", runDir.toString());
        List<Map<String, Object>> faults = new ArrayList<>();
        for (FaultOutcome o : r.faultOutcomes()) {
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("index", o.fault().index());
            f.put("kind", o.fault().kind());
            f.put("target", o.fault().target());
            f.put("worker", o.fault().worker());
            f.put("note", o.fault().note());
            f.put("held_ms", (o.fault().healMonoNs() - o.fault().injectMonoNs()) / 1_000_000);
            f.put("mark_at_injection", o.fault().markAtInjection());
            f.put("failover_ms", o.failoverNs() < 0 ? null : o.failoverNs() / 1_000_000);
            f.put(
                    "new_leader_committed_while_in_force",
                    o.failoverNs() >= 0
                            && o.failoverNs()
                                    < o.fault().healMonoNs() - o.fault().injectMonoNs());
            f.put("recovery_ms", o.recoveryNs() < 0 ? null : o.recoveryNs() / 1_000_000);
            f.put("successor_ms", o.successorNs() < 0 ? null : o.successorNs() / 1_000_000);
            if (o.fault().raftLeaderStopped() != null) {
                f.put("etcd_raft_leader_stopped", o.fault().raftLeaderStopped());
            }
            int[] rc = roguePerFault.get(o.fault().index());
            if (rc != null) {
                f.put("rogue_writes", rc[0]);
                f.put("rogue_refused", rc[1]);
                f.put("rogue_audited_once", rc[2]);
            }
            f.put("batches_committed", o.committed());
            f.put("stale_rejected", o.rejected());
            faults.add(f);
        }
        return new RunReport(cfg.seed(), r, rows, totals, List.copyOf(skipped), skipNotes, faults, h);
    }

    /**
     * Per kind that stopped one etcd member (hungEtcdMember): successor times split by whether that member was the
     * Raft leader, so that "stopping the Raft leader lengthens succession" can be read off one run. Injections whose
     * member's role is unknown are left out; {@code with_successor} counts those that saw a successor at all.
     */
    static Map<String, Map<String, Map<String, Object>>> successorsByStoppedMember(List<FaultOutcome> outcomes) {
        Map<String, Map<String, List<FaultOutcome>>> groups = new LinkedHashMap<>();
        for (FaultOutcome o : outcomes) {
            Boolean wasLeader = o.fault().raftLeaderStopped();
            if (wasLeader != null) {
                groups.computeIfAbsent(o.fault().kind(), k -> {
                            Map<String, List<FaultOutcome>> m = new LinkedHashMap<>();
                            m.put("raft_leader", new ArrayList<>());
                            m.put("follower", new ArrayList<>());
                            return m;
                        })
                        .get(wasLeader ? "raft_leader" : "follower")
                        .add(o);
            }
        }
        Map<String, Map<String, Map<String, Object>>> out = new LinkedHashMap<>();
        groups.forEach((kind, byRole) -> {
            Map<String, Map<String, Object>> roles = new LinkedHashMap<>();
            byRole.forEach((role, list) -> {
                List<Long> ms = list.stream()
                        .filter(o -> o.successorNs() >= 0)
                        .map(o -> o.successorNs() / 1_000_000)
                        .toList();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("injections", list.size());
                m.put("with_successor", ms.size());
                m.put("p50", ms.isEmpty() ? null : pct(ms, 50));
                m.put("p99", ms.isEmpty() ? null : pct(ms, 99));
                m.put("max", ms.isEmpty() ? null : pct(ms, 100));
                roles.put(role, m);
            });
            out.put(kind, roles);
        });
        return out;
    }

    static long pct(List<Long> samples, int p) {
        if (samples.isEmpty()) {
            return -1;
        }
        List<Long> s = new ArrayList<>(samples);
        s.sort(null);
        int rank = (int) Math.ceil(p / 100.0 * s.size());
        return s.get(Math.max(0, Math.min(s.size() - 1, rank - 1)));
    }

    public boolean ok() {
        return result.ok();
    }

    /** Injections per kind, for the smoke test's "every kind at least twice". */
    public Map<String, Integer> injectionsPerKind() {
        Map<String, Integer> m = new LinkedHashMap<>();
        rows.forEach(r -> m.put(r.kind(), r.injections()));
        return m;
    }

    public String table() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(
                Locale.ROOT,
                "Fault run seed %d (%s, TTL %d ms, %s s): %d injections, %s payments settled, "
                        + "%d batches, %d stale attempts rejected, %d violations, leader overlap %d ns%n",
                seed,
                totals.get("mode"),
                (Long) totals.get("ttl_ms"),
                totals.get("elapsed_s"),
                (Integer) totals.get("injections"),
                totals.get("payments_settled"),
                (Integer) totals.get("batches_committed_db"),
                rows.stream().mapToInt(Row::staleRejected).sum(),
                result.safetyViolations().size(),
                result.leaderOverlapNs()));
        sb.append("| fault kind | injections | new leader committed while in force | batches committed "
                + "| stale attempts rejected | violations "
                + "| failover p50 / p99 / max (ms) | recovery after heal p50 / p99 / max (ms) "
                + "| successor p50 / p99 / max (ms) | election findings | rogue writes refused / audited / made |\n");
        sb.append("|---|---:|---:|---:|---:|---:|---|---|---|---:|---|\n");
        for (Row r : rows) {
            sb.append(String.format(
                    Locale.ROOT,
                    "| %s | %d | %d | %d | %d | %d | %s | %s | %s | %d | %s |%n",
                    r.kind(),
                    r.injections(),
                    r.takeoversDuringFault(),
                    r.batchesCommitted(),
                    r.staleRejected(),
                    r.violations(),
                    r.injections() == 0
                            ? "-"
                            : r.failoverSamples() == 0
                                    ? "n/a (no new term)"
                                    : ms(r.failoverP50()) + " / " + ms(r.failoverP99()) + " / " + ms(r.failoverMax())
                                            + (r.failoverSamples() < r.injections()
                                                    ? " (" + r.failoverSamples() + " with a new term)"
                                                    : ""),
                    ms(r.recoveryP50()) + " / " + ms(r.recoveryP99()) + " / " + ms(r.recoveryMax()),
                    r.successorSamples() == 0
                            ? "-"
                            : ms(r.successorP50()) + " / " + ms(r.successorP99()) + " / " + ms(r.successorMax()),
                    r.electionFindings(),
                    r.rogueAttempts() == 0
                            ? "-"
                            : r.rogueRefused() + " / " + r.rogueAudited() + " / " + r.rogueAttempts()));
        }
        if (!skippedKinds.isEmpty()) {
            sb.append("Skipped (not available here): ").append(skippedKinds).append('\n');
            skipNotes.forEach((k, why) ->
                    sb.append("  ").append(k).append(": ").append(why).append('\n'));
        }
        sb.append(String.format(
                Locale.ROOT,
                "etcd %s; rogue writes: %d made, %d refused, %d audited exactly once, %d "
                        + "committed; election findings %d (succession bound %s ms), validity overlap around stalled etcd "
                        + "members %d ns%n",
                totals.get("etcd_server_version"),
                result.rogue().attempts(),
                result.rogue().refused(),
                result.rogue().audited(),
                result.rogue().committed(),
                result.electionFindings().size(),
                totals.get("succession_bound_ms"),
                result.etcdStallOverlapNs()));
        if (result.asyncLoss().total() > 0) {
            sb.append(
                            "Acknowledged commits lost by failovers to an asynchronous standby (durability, not a violation): ")
                    .append(result.asyncLoss().payments())
                    .append(" inserted payment(s), ")
                    .append(result.asyncLoss().batches())
                    .append(" batch(es) reported committed, ")
                    .append(result.asyncLoss().auditRows())
                    .append(" audit row(s)\n");
        }
        if (!result.validityAvailable()) {
            sb.append("(f) not checked: the workers recorded no validity windows\n");
        }
        return sb.toString();
    }

    private static String ms(long v) {
        return v < 0 ? "-" : Long.toString(v);
    }

    public void write(Path file) {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("totals", totals);
        json.put("per_kind", rows);
        json.put("skipped_kinds", skippedKinds);
        json.put("ok", result.ok());
        json.put(
                "violations",
                result.safetyViolations().stream().map(Violation::toString).toList());
        json.put(
                "election_findings",
                result.electionFindings().stream().map(Violation::toString).toList());
        json.put("skip_notes", skipNotes);
        json.put(
                "lost_by_async_failover",
                result.lostByAsyncFailover().stream()
                        .map(Violation::explanation)
                        .toList());
        json.put("faults", faults);
        json.put("table_markdown", table());
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            JSON.writeValue(file.toFile(), json);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write report " + file, e);
        }
    }

    /** The same report as one self-contained HTML page (timeline per worker, fault windows, the table). */
    public void writeHtml(Path file) {
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Files.writeString(file, HtmlReport.render(this));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write report " + file, e);
        }
    }
}
