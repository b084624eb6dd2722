package dev.fenceline.election.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.election.LeaderRecord;
import dev.fenceline.election.LeadershipState;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Deadline arithmetic, backoff, record codec and the transition table: the pure parts of the election. */
class PureLogicTest {

    @Test
    void deadlineIsConfirmedSendPlusSmallerTtlMinusMargin() {
        long send = 1_000_000_000L;
        assertThat(ValidityDeadline.deadlineNanos(send, 5, Duration.ofSeconds(5), Duration.ofSeconds(1)))
                .isEqualTo(send + 4_000_000_000L);
        // etcd granted less than asked: use etcd's
        assertThat(ValidityDeadline.deadlineNanos(send, 3, Duration.ofSeconds(5), Duration.ofSeconds(1)))
                .isEqualTo(send + 2_000_000_000L);
        // etcd granted more (minimum TTL raised it): still only ours
        assertThat(ValidityDeadline.deadlineNanos(send, 10, Duration.ofSeconds(5), Duration.ofSeconds(1)))
                .isEqualTo(send + 4_000_000_000L);
        assertThatThrownBy(() -> ValidityDeadline.deadlineNanos(send, 0, Duration.ofSeconds(5), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void deadlineComparisonsSurviveNanoTimeOverflow() {
        long nearMax = Long.MAX_VALUE - 10;
        long deadline = ValidityDeadline.deadlineNanos(nearMax, 2, Duration.ofSeconds(2), Duration.ofMillis(400));
        assertThat(deadline).isNegative(); // wrapped
        assertThat(ValidityDeadline.isBefore(nearMax, deadline)).isTrue();
        assertThat(ValidityDeadline.isBefore(deadline, deadline)).isFalse();
        assertThat(ValidityDeadline.later(deadline, nearMax)).isEqualTo(deadline);
        assertThat(ValidityDeadline.remainingNanos(nearMax, deadline)).isEqualTo(1_600_000_000L);
        assertThat(ValidityDeadline.remainingNanos(deadline + 5, deadline)).isZero();
    }

    @Test
    void lateResponseToAnOldRenewalNeverMovesTheDeadlineBack() {
        long newer = ValidityDeadline.deadlineNanos(2_000, 2, Duration.ofSeconds(2), Duration.ofMillis(400));
        long older = ValidityDeadline.deadlineNanos(1_000, 2, Duration.ofSeconds(2), Duration.ofMillis(400));
        assertThat(ValidityDeadline.later(newer, older)).isEqualTo(newer);
        assertThat(ValidityDeadline.later(older, newer)).isEqualTo(newer);
    }

    @Test
    void backoffGrowsWithFullJitterAndResets() {
        Backoff b = new Backoff(Duration.ofMillis(50), Duration.ofMillis(1000));
        assertThat(b.ceilingNanos(0)).isEqualTo(50_000_000L);
        assertThat(b.ceilingNanos(1)).isEqualTo(100_000_000L);
        assertThat(b.ceilingNanos(10)).isEqualTo(1_000_000_000L);
        for (int i = 0; i < 50; i++) {
            Duration d = b.next();
            assertThat(d).isBetween(Duration.ofMillis(50), Duration.ofMillis(1000));
        }
        b.reset();
        assertThat(b.attempts()).isZero();
        assertThat(b.next()).isEqualTo(Duration.ofMillis(50));
    }

    @Test
    void recordCodecRoundTripsSnakeCaseJson() {
        LeaderRecord r = new LeaderRecord(
                "w1", 7, 7587869325843513348L, "9f0c", Map.of("host", "h1"), Instant.parse("2026-11-30T17:00:00Z"));
        byte[] json = LeaderRecordCodec.encode(r);
        assertThat(new String(json, StandardCharsets.UTF_8))
                .isEqualTo("{\"leader_id\":\"w1\",\"term\":7,"
                        + "\"lease_id\":7587869325843513348,\"nonce\":\"9f0c\",\"metadata\":{\"host\":\"h1\"},"
                        + "\"acquired_at\":\"2026-11-30T17:00:00Z\"}");
        assertThat(LeaderRecordCodec.decode(json)).isEqualTo(r);
        assertThat(r.leaseIdHex()).isEqualTo("694d86f318fc4004");
    }

    @Test
    void recordCodecIgnoresUnknownFieldsAndRejectsMissingIdentity() {
        String extra = "{\"leader_id\":\"w\",\"term\":1,\"lease_id\":2,\"nonce\":\"n\",\"future\":true}";
        LeaderRecord r = LeaderRecordCodec.decode(extra.getBytes(StandardCharsets.UTF_8));
        assertThat(r.acquiredAt()).isEqualTo(Instant.EPOCH);
        assertThat(r.metadata()).isEmpty();
        assertThatThrownBy(() -> LeaderRecordCodec.decode(
                        "{\"leader_id\":\"w\",\"lease_id\":2,\"nonce\":\"n\"}".getBytes(StandardCharsets.UTF_8)))
                .hasMessageContaining("no integer field 'term'");
        assertThatThrownBy(() ->
                        LeaderRecordCodec.decode("{\"leader_id\":\"w\",\"term\":\"1\",\"lease_id\":2,\"nonce\":\"n\"}"
                                .getBytes(StandardCharsets.UTF_8)))
                .hasMessageContaining("no integer field 'term'");
        assertThatThrownBy(() -> LeaderRecordCodec.decode("not json".getBytes(StandardCharsets.UTF_8)))
                .hasMessageContaining("not JSON");
        assertThatThrownBy(() -> LeaderRecordCodec.decode("[1]".getBytes(StandardCharsets.UTF_8)))
                .hasMessageContaining("not a JSON object");
    }

    @Test
    void transitionTableEncodesTheSafetyRules() {
        // a term is only entered from CANDIDATE/FOLLOWER (campaign won or unknown outcome resolved)
        for (LeadershipState s : LeadershipState.values()) {
            boolean entersTerm =
                    s == LeadershipState.CANDIDATE || s == LeadershipState.FOLLOWER || s == LeadershipState.SUSPECT;
            assertThat(Transitions.allowed(s, LeadershipState.LEADER))
                    .as(s + " -> LEADER")
                    .isEqualTo(entersTerm);
        }
        // a held term never silently turns into a new campaign
        assertThat(Transitions.allowed(LeadershipState.LEADER, LeadershipState.CANDIDATE))
                .isFalse();
        assertThat(Transitions.allowed(LeadershipState.SUSPECT, LeadershipState.CANDIDATE))
                .isFalse();
        assertThat(Transitions.allowed(LeadershipState.LEADER, LeadershipState.SUSPECT))
                .isTrue();
        assertThat(Transitions.allowed(LeadershipState.SUSPECT, LeadershipState.LOST))
                .isTrue();
        assertThat(Transitions.allowed(LeadershipState.LOST, LeadershipState.CANDIDATE))
                .isTrue();
        assertThat(Transitions.allowed(LeadershipState.LOST, LeadershipState.LEADER))
                .isFalse();
        // CLOSED is terminal, reachable from everywhere else
        for (LeadershipState s : LeadershipState.values()) {
            assertThat(Transitions.allowed(LeadershipState.CLOSED, s)).isFalse();
            if (s != LeadershipState.CLOSED) {
                assertThat(Transitions.allowed(s, LeadershipState.CLOSED)).isTrue();
            }
        }
        assertThatThrownBy(() -> Transitions.check(LeadershipState.LEADER, LeadershipState.CANDIDATE))
                .hasMessage("illegal election state transition LEADER -> CANDIDATE");
        assertThat(Transitions.holdsTerm(LeadershipState.SUSPECT)).isTrue();
        assertThat(Transitions.holdsTerm(LeadershipState.LOST)).isFalse();
    }
}
