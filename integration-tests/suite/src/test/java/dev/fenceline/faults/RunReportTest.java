package dev.fenceline.faults;

import static org.assertj.core.api.Assertions.assertThat;

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
import dev.fenceline.faults.history.RogueAttempt;
import dev.fenceline.faults.history.StateChange;
import dev.fenceline.faults.history.TermMark;
import dev.fenceline.faults.history.ValidityWindow;
import dev.fenceline.faults.nemesis.Faults;
import dev.fenceline.faults.workload.RunConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The report's per-kind table and per-fault JSON, from hand-made histories. */
class RunReportTest {
    private static final long S = 1_000_000_000L;
    private static final Instant T0 = Instant.parse("2026-11-30T17:00:00Z");

    /** w1 leads term 1 and is frozen (fault #1, which hit w1); w2 takes over with term 2; then a rogue-writer fault #2. */
    private static History.Builder twoFaults() {
        return History.builder(7)
                .mark(new TermMark("settlement", 1, "w1", T0))
                .mark(new TermMark("settlement", 2, "w2", T0.plusSeconds(10)))
                .attempt(new BatchAttempt("w1", 1, "k10", 1 * S, 2 * S, Outcome.COMMITTED, 1, null))
                .attempt(new BatchAttempt("w2", 2, "k11", 11 * S, 12 * S, Outcome.COMMITTED, 1, null))
                .attempt(new BatchAttempt("w2", 2, "k12", 17 * S, 18 * S, Outcome.COMMITTED, 1, null))
                .committed(new CommittedBatch(10, "k10", 1, "w1", 1, 100, T0.plusSeconds(2)))
                .committed(new CommittedBatch(11, "k11", 2, "w2", 1, 200, T0.plusSeconds(12)))
                .committed(new CommittedBatch(12, "k12", 2, "w2", 1, 300, T0.plusSeconds(18)))
                .payment(new Payment(1, "SETTLED", 10L, 100))
                .payment(new Payment(2, "SETTLED", 11L, 200))
                .payment(new Payment(3, "SETTLED", 12L, 300))
                .inserted(List.of(1L, 2L, 3L))
                .state(new StateChange("w1", 0, 0, "LEADER", 1))
                .state(new StateChange("w2", 9 * S, 0, "LEADER", 2))
                .validity(new ValidityWindow("w1", 1, 0, 5 * S))
                .validity(new ValidityWindow("w2", 2, 9 * S, 20 * S))
                .fault(new FaultRecord(1, Faults.FREEZE_LEADER, "w1", "w1", 5 * S, 8 * S, 1, ""))
                .fault(new FaultRecord(2, Faults.ROGUE_WRITER, "rogue", null, 15 * S, 16 * S, 2, ""));
    }

    private static RogueAttempt rogue(String id, Outcome outcome, String sqlState) {
        return new RogueAttempt(
                id,
                "STALE_TERM",
                "settlement.settlement_batch",
                "1",
                15 * S,
                15 * S + 1000,
                outcome,
                sqlState,
                null,
                false,
                2);
    }

    private static RejectedWrite auditOf(long rowId, String rogueId) {
        return new RejectedWrite(
                rowId, "settlement", 1, 2, rogueId, "settlement.settlement_batch", null, T0.plusSeconds(15));
    }

    private static RunReport report(History h) {
        CheckResult r = new HistoryChecker(CheckerConfig.forTtl(Duration.ofSeconds(3))).check(h);
        RunConfig cfg = RunConfig.smoke(
                7,
                Path.of("fenceline.jar"),
                Path.of("target/run-report-test"),
                List.of(Faults.FREEZE_LEADER, Faults.ROGUE_WRITER));
        return RunReport.of(cfg, h, r, List.of(), 0, Duration.ofSeconds(30), Path.of("target/run-report-test/run-7"));
    }

    private static RunReport.Row row(RunReport report, String kind) {
        return report.rows.stream()
                .filter(r -> r.kind().equals(kind))
                .findFirst()
                .orElseThrow();
    }

    @Test
    void rogueWritesCommittedOrNotAuditedExactlyOnceCountAsViolationsOfTheirKind() {
        History h = twoFaults()
                .rogue(rogue("rogue-2-1", Outcome.COMMITTED, null)) // got past the fence
                .rogue(rogue("rogue-2-2", Outcome.REJECTED, "FL001")) // audited twice
                .rogue(rogue("rogue-2-3", Outcome.REJECTED, "FL001")) // never audited
                .rogue(rogue("rogue-2-4", Outcome.REJECTED, "FL001")) // audited once: fine
                .rejected(auditOf(10, "rogue-2-2"))
                .rejected(auditOf(11, "rogue-2-2"))
                .rejected(auditOf(12, "rogue-2-4"))
                .build();
        RunReport report = report(h);
        assertThat(report.result.safetyViolations()).hasSize(3);
        assertThat(row(report, Faults.ROGUE_WRITER).violations()).isEqualTo(3);
        assertThat(row(report, Faults.FREEZE_LEADER).violations()).isZero();
        assertThat(report.table()).contains("| " + Faults.ROGUE_WRITER + " | 1 |");
    }

    @Test
    void everyFaultInTheJsonNamesTheWorkerItHitOrNull() {
        RunReport report = report(twoFaults().build());
        assertThat(report.result.ok()).as(report.result.explain()).isTrue();
        assertThat(report.faults)
                .extracting(f -> f.get("index"), f -> f.get("worker"))
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(1, "w1"), org.assertj.core.groups.Tuple.tuple(2, null));
        assertThat(report.faults)
                .allSatisfy(f -> assertThat((Map<String, Object>) f).containsKey("worker"));
    }

    @Test
    void successionsAfterAHungEtcdMemberAreSplitByWhetherTheStoppedMemberWasTheRaftLeader() {
        // Three hung members on w2 (leader of term 2): the Raft leader at 21 s (successor w3 after 4 s), a follower
        // at 31 s (successor w1 after 1 s), a member of unknown role at 41 s (left out).
        History h = twoFaults()
                .state(new StateChange("w3", 25 * S, 0, "LEADER", 3))
                .state(new StateChange("w1", 32 * S, 0, "LEADER", 4))
                .state(new StateChange("w2", 42 * S, 0, "LEADER", 5))
                .fault(new FaultRecord(3, Faults.HUNG_ETCD_MEMBER, "w2 + etcd m1", "w2", 21 * S, 23 * S, 2, "", true))
                .fault(new FaultRecord(4, Faults.HUNG_ETCD_MEMBER, "w3 + etcd m2", "w3", 31 * S, 33 * S, 3, "", false))
                .fault(new FaultRecord(5, Faults.HUNG_ETCD_MEMBER, "w1 + etcd m3", "w1", 41 * S, 43 * S, 4, "", null))
                .build();
        RunReport report = report(h);
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Map<String, Object>>> split = (Map<String, Map<String, Map<String, Object>>>)
                report.totals.get("successor_ms_by_stopped_etcd_member");
        assertThat(split).containsOnlyKeys(Faults.HUNG_ETCD_MEMBER);
        assertThat(split.get(Faults.HUNG_ETCD_MEMBER).get("raft_leader"))
                .containsEntry("injections", 1)
                .containsEntry("with_successor", 1)
                .containsEntry("p50", 4000L)
                .containsEntry("max", 4000L);
        assertThat(split.get(Faults.HUNG_ETCD_MEMBER).get("follower"))
                .containsEntry("injections", 1)
                .containsEntry("p50", 1000L);
        assertThat(report.faults)
                .filteredOn(f -> f.get("index").equals(3))
                .singleElement()
                .satisfies(f -> assertThat(f).containsEntry("etcd_raft_leader_stopped", true));
        assertThat(report.faults)
                .filteredOn(f -> f.get("index").equals(5))
                .singleElement()
                .satisfies(f -> assertThat(f).doesNotContainKey("etcd_raft_leader_stopped"));
    }
}
