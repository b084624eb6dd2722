package dev.fenceline.faults;

import dev.fenceline.faults.check.CheckResult;
import dev.fenceline.faults.check.CheckerConfig;
import dev.fenceline.faults.check.HistoryChecker;
import dev.fenceline.faults.history.BatchAttempt;
import dev.fenceline.faults.history.CommittedBatch;
import dev.fenceline.faults.history.FaultRecord;
import dev.fenceline.faults.history.History;
import dev.fenceline.faults.history.Outcome;
import dev.fenceline.faults.history.Payment;
import dev.fenceline.faults.history.RejectedWrite;
import dev.fenceline.faults.history.StateChange;
import dev.fenceline.faults.history.TermMark;
import dev.fenceline.faults.history.ValidityWindow;
import dev.fenceline.faults.nemesis.Faults;
import dev.fenceline.faults.workload.RunConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * A hand-made run for the report tests: three workers, leadership moving w1 → w2 → w3, one stale attempt rejected and
 * audited, and one injection of every fault kind (in {@link Faults#kinds()} order, one per 4 s), each healed.
 * Names carry characters HTML and scripts care about, so escaping is exercised.
 */
final class ReportFixtures {
    static final long S = 1_000_000_000L;
    static final long BASE = 1_000 * S; // CLOCK_MONOTONIC values are far from 0
    static final Instant T0 = Instant.parse("2026-12-01T12:00:00Z");

    private ReportFixtures() {}

    static RunReport report() {
        List<String> kinds = Faults.kinds();
        History.Builder b = History.builder(77)
                .mark(new TermMark("settlement", 1, "w1", T0))
                .mark(new TermMark("settlement", 2, "w2", T0.plusSeconds(20)))
                .mark(new TermMark("settlement", 3, "w3", T0.plusSeconds(40)))
                .state(new StateChange("w1", BASE, 0, "LEADER", 1))
                .state(new StateChange("w2", BASE, 0, "FOLLOWER", 0))
                .state(new StateChange("w3", BASE, 0, "FOLLOWER", 0))
                .state(new StateChange("w1", BASE + 18 * S, 0, "SUSPECT", 1))
                .state(new StateChange("w1", BASE + 19 * S, 0, "LOST", 1))
                .state(new StateChange("w2", BASE + 20 * S, 0, "LEADER", 2))
                .state(new StateChange("w1", BASE + 21 * S, 0, "FOLLOWER", 0))
                .state(new StateChange("w2", BASE + 39 * S, 0, "FOLLOWER", 0))
                .state(new StateChange("w3", BASE + 40 * S, 0, "LEADER", 3))
                .validity(new ValidityWindow("w1", 1, BASE, BASE + 18 * S))
                .validity(new ValidityWindow("w2", 2, BASE + 20 * S, BASE + 39 * S))
                .validity(new ValidityWindow("w3", 3, BASE + 40 * S, BASE + 200 * S));
        long id = 1;
        long payment = 1;
        long end = BASE + (kinds.size() * 4L + 12) * S;
        for (long t = BASE + S; t < end; t += S, id++, payment++) {
            String w = t < BASE + 18 * S ? "w1" : t < BASE + 39 * S ? "w2" : "w3";
            long term = "w1".equals(w) ? 1 : "w2".equals(w) ? 2 : 3;
            if (t > BASE + 18 * S && t < BASE + 21 * S) {
                continue; // nobody leads
            }
            String key = "k<" + id + ">\"&'";
            b.attempt(new BatchAttempt(w, term, key, t - S / 5, t, Outcome.COMMITTED, 1, null))
                    .committed(new CommittedBatch(id, key, term, w, 1, 100, T0.plusNanos(t - BASE)))
                    .payment(new Payment(payment, "SETTLED", id, 100))
                    .inserted(payment);
        }
        b.attempt(new BatchAttempt(
                        "w1",
                        1,
                        "stale</script>",
                        BASE + 17 * S,
                        BASE + 21 * S + S / 2,
                        Outcome.REJECTED,
                        1,
                        "term 1 below the mark 2"))
                .rejected(new RejectedWrite(
                        1, "settlement", 1, 2, "w1", "settlement_batch", "stale</script>", T0.plusSeconds(21)))
                .attempt(new BatchAttempt(
                        "w2",
                        2,
                        "failed",
                        BASE + 30 * S,
                        BASE + 30 * S + S / 10,
                        Outcome.FAILED,
                        1,
                        "terminating connection"));
        for (int i = 0; i < kinds.size(); i++) {
            long inject = BASE + (4L * i + 2) * S;
            b.fault(new FaultRecord(
                    i + 1,
                    kinds.get(i),
                    "w<" + (i % 3 + 1) + ">",
                    "w" + (i % 3 + 1),
                    inject,
                    inject + 2 * S,
                    i / 3,
                    "note & <b>not bold</b>"));
        }
        History h = b.build();
        CheckResult r = new HistoryChecker(CheckerConfig.forTtl(Duration.ofSeconds(2))).check(h);
        RunConfig cfg = RunConfig.smoke(77, Path.of("fenceline.jar"), Path.of("target/report-fixture"), kinds);
        return RunReport.of(cfg, h, r, List.of(), 0, Duration.ofSeconds(90), Path.of("target/report-fixture/run-77"));
    }
}
