package dev.fenceline.election.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionKeys;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.election.LossReason;
import dev.fenceline.election.internal.ElectionDecision.Action;
import dev.fenceline.election.internal.ElectionDecision.AdoptCampaign;
import dev.fenceline.election.internal.ElectionDecision.Campaign;
import dev.fenceline.election.internal.ElectionDecision.CampaignOutcome;
import dev.fenceline.election.internal.ElectionDecision.CannotCampaign;
import dev.fenceline.election.internal.ElectionDecision.Decision;
import dev.fenceline.election.internal.ElectionDecision.DeleteLeftover;
import dev.fenceline.election.internal.ElectionDecision.Facts;
import dev.fenceline.election.internal.ElectionDecision.Follow;
import dev.fenceline.election.internal.ElectionDecision.Held;
import dev.fenceline.election.internal.ElectionDecision.HoldOff;
import dev.fenceline.election.internal.ElectionDecision.InDoubt;
import dev.fenceline.election.internal.ElectionDecision.LeaseFacts;
import dev.fenceline.election.internal.ElectionDecision.Resign;
import dev.fenceline.election.internal.ElectionDecision.ResumeLeader;
import dev.fenceline.election.internal.ElectionDecision.Stay;
import dev.fenceline.election.internal.ElectionDecision.WaitForLease;
import dev.fenceline.election.internal.ElectionDecision.WaitOutOldLeader;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The election's decisions, table-driven (in the manner of client-go's leaderelection_test.go: a fake store
 * state and an injected clock per row). Each row: what etcd said, what this candidate holds, the lease and
 * the clock, and the expected decision. The rows named after a fault cover the behaviour that fault needs.
 */
class ElectionDecisionTest {
    static final ElectionKeys KEYS = ElectionKeys.of("/fenceline/", "orders");
    static final long OUR_LEASE = 100;
    static final long OTHER_LEASE = 200;
    static final long NOW = TimeUnit.SECONDS.toNanos(1_000);
    static final long SEC = TimeUnit.SECONDS.toNanos(1);

    /** One row's inputs, with defaults: no keys, no term held, a healthy lease valid for 2 s more. */
    static final class Row {
        final List<StoredKey> kvs = new ArrayList<>();
        Held held;
        LeaseFacts lease = new LeaseFacts(OUR_LEASE, LeaseKeeper.Health.HEALTHY, NOW + 2 * SEC);
        final Map<String, InDoubt> inDoubt = new HashMap<>();
        boolean holdingOff;
        long holdOffUntil;
        long leaseLossHoldOff;
        long absentSince = -1;
        long now = NOW;

        Row leader(String id, long term, long lease, String nonce, long modRevision) {
            byte[] v = LeaderRecordCodec.encode(new LeaderRecord(id, term, lease, nonce, Map.of(), Instant.EPOCH));
            kvs.add(new StoredKey(KEYS.leader(), modRevision, lease, v));
            return this;
        }

        Row key(String key, String value, long modRevision) {
            kvs.add(new StoredKey(key, modRevision, 0, value.getBytes(StandardCharsets.UTF_8)));
            return this;
        }

        Row term(long term, long modRevision) {
            return key(KEYS.term(), Long.toString(term), modRevision);
        }

        Facts facts() {
            return new Facts(
                    KeysSnapshot.of(KEYS, kvs),
                    held,
                    lease,
                    inDoubt,
                    holdingOff,
                    holdOffUntil,
                    leaseLossHoldOff,
                    absentSince,
                    now);
        }
    }

    static Arguments row(String name, Consumer<Row> given, Consumer<Decision> expect) {
        Row r = new Row();
        given.accept(r);
        return Arguments.of(name, r, expect);
    }

    static Consumer<Decision> action(Class<? extends Action> type) {
        return d -> assertThat(d.action()).isInstanceOf(type);
    }

    static Stream<Arguments> rows() {
        return Stream.of(
                row(
                        "no leader, healthy lease: campaign for term + 1",
                        r -> r.term(7, 50),
                        d -> assertThat(d.action()).isEqualTo(new Campaign(8))),
                row(
                        "no leader, floor above the term: campaign at the floor",
                        r -> r.term(7, 50).key(KEYS.termFloor(), "100", 60),
                        d -> assertThat(d.action()).isEqualTo(new Campaign(100))),
                row("first term ever: 1", r -> {}, d -> assertThat(d.action()).isEqualTo(new Campaign(1))),
                row(
                        "checked terms: last term MAX_TERM - 1 gives MAX_TERM",
                        r -> r.term(ElectionAdmin.MAX_TERM - 1, 50),
                        d -> assertThat(d.action()).isEqualTo(new Campaign(ElectionAdmin.MAX_TERM))),
                row(
                        "checked terms: exhausted term space is refused, never wrapped",
                        r -> r.term(Long.MAX_VALUE - 1, 50),
                        d -> assertThat(d.action())
                                .isInstanceOfSatisfying(
                                        CannotCampaign.class,
                                        c -> assertThat(c.problem())
                                                .contains("term must stay at most " + ElectionAdmin.MAX_TERM))),
                row(
                        "checked terms: absurd floor is refused",
                        r -> r.term(3, 50).key(KEYS.termFloor(), Long.toString(Long.MAX_VALUE), 60),
                        d -> assertThat(d.action())
                                .isInstanceOfSatisfying(
                                        CannotCampaign.class,
                                        c -> assertThat(c.problem()).contains("term-floor must be at most"))),
                row(
                        "someone else leads: follow",
                        r -> r.term(7, 50).leader("w2", 7, OTHER_LEASE, "n2", 50),
                        d -> assertThat(d.action()).isEqualTo(new Follow("leader is w2 term 7"))),
                row(
                        "periodic follower read finds the expired leader gone (hung watch member): campaign",
                        r -> r.term(7, 50),
                        action(Campaign.class)),
                row(
                        "held, record still ours, LEADER: stay",
                        r -> {
                            r.term(7, 50).leader("me", 7, OUR_LEASE, "n1", 50);
                            r.held = new Held(OUR_LEASE, "n1", 7, false);
                        },
                        d -> {
                            assertThat(d.action()).isInstanceOf(Stay.class);
                            assertThat(d.lost()).isNull();
                        }),
                row(
                        "held, SUSPECT, read proves it ours and the deadline is ahead: resume LEADER",
                        r -> {
                            r.term(7, 50).leader("me", 7, OUR_LEASE, "n1", 50);
                            r.held = new Held(OUR_LEASE, "n1", 7, true);
                        },
                        action(ResumeLeader.class)),
                row(
                        "suspend: SUSPECT, record ours, but the clock (counting suspend) is past the deadline: no resume",
                        r -> {
                            r.term(7, 50).leader("me", 7, OUR_LEASE, "n1", 50);
                            r.held = new Held(OUR_LEASE, "n1", 7, true);
                            r.now = NOW + 30 * SEC; // the suspend-aware clock after a 30 s suspend
                        },
                        action(Stay.class)),
                row(
                        "held, SUSPECT, keeper not HEALTHY: no resume",
                        r -> {
                            r.term(7, 50).leader("me", 7, OUR_LEASE, "n1", 50);
                            r.held = new Held(OUR_LEASE, "n1", 7, true);
                            r.lease = new LeaseFacts(OUR_LEASE, LeaseKeeper.Health.SUSPECT, NOW + SEC);
                        },
                        action(Stay.class)),
                row(
                        "held, record deleted: term lost, then campaign",
                        r -> {
                            r.term(7, 50);
                            r.held = new Held(OUR_LEASE, "n1", 7, false);
                        },
                        d -> {
                            assertThat(d.lost()).isEqualTo(LossReason.RECORD_GONE);
                            assertThat(d.lostWhy()).isEqualTo("leader record deleted");
                            assertThat(d.action()).isEqualTo(new Campaign(8));
                        }),
                row(
                        "held, record now someone else's: term lost, follow",
                        r -> {
                            r.term(8, 60).leader("w2", 8, OTHER_LEASE, "n2", 60);
                            r.held = new Held(OUR_LEASE, "n1", 7, false);
                        },
                        d -> {
                            assertThat(d.lost()).isEqualTo(LossReason.RECORD_GONE);
                            assertThat(d.action()).isInstanceOf(Follow.class);
                        }),
                row(
                        "held, same lease but another nonce (a later campaign of ours): the held term is over",
                        r -> {
                            r.term(8, 60).leader("me", 8, OUR_LEASE, "n9", 60);
                            r.held = new Held(OUR_LEASE, "n1", 7, false);
                        },
                        d -> {
                            assertThat(d.lost()).isEqualTo(LossReason.RECORD_GONE);
                            assertThat(d.action()).isInstanceOf(DeleteLeftover.class);
                        }),
                row(
                        "held, kill switch: resign (PAUSED)",
                        r -> {
                            r.term(7, 50).leader("me", 7, OUR_LEASE, "n1", 50).key(KEYS.paused(), "x", 70);
                            r.held = new Held(OUR_LEASE, "n1", 7, false);
                        },
                        d -> assertThat(d.action())
                                .isInstanceOfSatisfying(
                                        Resign.class,
                                        x -> assertThat(x.reason()).isEqualTo(LossReason.PAUSED))),
                row(
                        "held, resign request for this term: resign with hold-off, deleting the request",
                        r -> {
                            r.term(7, 50).leader("me", 7, OUR_LEASE, "n1", 50).key(KEYS.resignRequest(), "7", 70);
                            r.held = new Held(OUR_LEASE, "n1", 7, false);
                        },
                        d -> assertThat(d.action())
                                .isEqualTo(new Resign(LossReason.RESIGN_REQUESTED, "resign requested", true, true))),
                row(
                        "held, resign request for an older term: stay, delete the stale request",
                        r -> {
                            r.term(7, 50).leader("me", 7, OUR_LEASE, "n1", 50).key(KEYS.resignRequest(), "6", 40);
                            r.held = new Held(OUR_LEASE, "n1", 7, false);
                        },
                        d -> {
                            assertThat(d.action()).isInstanceOf(Stay.class);
                            assertThat(d.staleResignRequest().modRevision()).isEqualTo(40);
                        }),
                row(
                        "campaign in doubt found committed (our lease + its nonce): adopt the term",
                        r -> {
                            r.term(8, 60).leader("me", 8, OUR_LEASE, "n5", 60);
                            r.inDoubt.put("n5", new InDoubt(OUR_LEASE, 50));
                        },
                        d -> assertThat(d.action())
                                .isInstanceOfSatisfying(
                                        AdoptCampaign.class,
                                        a -> assertThat(a.record().term()).isEqualTo(8))),
                row(
                        "record on our lease that no campaign accounts for: delete it (exact bytes)",
                        r -> r.term(8, 60).leader("me", 8, OUR_LEASE, "n5", 60),
                        d -> assertThat(d.action())
                                .isInstanceOfSatisfying(
                                        DeleteLeftover.class,
                                        x -> assertThat(x.leader().modRevision())
                                                .isEqualTo(60))),
                row(
                        "record on our lease but the lease is gone: follow (it goes with the lease)",
                        r -> {
                            r.term(8, 60).leader("me", 8, OUR_LEASE, "n5", 60);
                            r.lease = new LeaseFacts(OUR_LEASE, LeaseKeeper.Health.GONE, 0);
                        },
                        action(Follow.class)),
                row(
                        "campaigns in doubt at an older term revision can never commit: keep only the current revision",
                        r -> {
                            r.term(9, 70).leader("w2", 9, OTHER_LEASE, "n2", 70);
                            r.inDoubt.put("n5", new InDoubt(OUR_LEASE, 50));
                        },
                        d -> assertThat(d.keepInDoubtAt()).isEqualTo(70)),
                row(
                        "kill switch, no leader: follow, never campaign",
                        r -> r.term(7, 50).key(KEYS.paused(), "x", 70),
                        action(Follow.class)),
                row(
                        "holding off after resign: wait the rest of it",
                        r -> {
                            r.term(7, 50);
                            r.holdingOff = true;
                            r.holdOffUntil = NOW + 300;
                        },
                        d -> assertThat(d.action()).isEqualTo(new HoldOff(300))),
                row(
                        "hold-off over: campaign and clear it",
                        r -> {
                            r.term(7, 50);
                            r.holdingOff = true;
                            r.holdOffUntil = NOW - 1;
                        },
                        d -> {
                            assertThat(d.action()).isEqualTo(new Campaign(8));
                            assertThat(d.holdOffOver()).isTrue();
                        }),
                row(
                        "lease-loss hold-off: record gone without a resign marker, first seen now: wait the whole hold-off",
                        r -> {
                            r.term(7, 50);
                            r.leaseLossHoldOff = 4 * SEC;
                        },
                        d -> assertThat(d.action()).isEqualTo(new WaitOutOldLeader(4 * SEC))),
                row(
                        "lease-loss hold-off: counted from the first sight of the absence, not from this read",
                        r -> {
                            r.term(7, 50).key(KEYS.resigned(), "6", 40);
                            r.leaseLossHoldOff = 4 * SEC;
                            r.absentSince = NOW - 3 * SEC;
                        },
                        d -> assertThat(d.action()).isEqualTo(new WaitOutOldLeader(SEC))),
                row(
                        "lease-loss hold-off over: campaign",
                        r -> {
                            r.term(7, 50);
                            r.leaseLossHoldOff = 4 * SEC;
                            r.absentSince = NOW - 4 * SEC;
                        },
                        d -> assertThat(d.action()).isEqualTo(new Campaign(8))),
                row(
                        "lease-loss hold-off: the last term was resigned (marker = term): campaign at once",
                        r -> {
                            r.term(7, 50).key(KEYS.resigned(), "7", 55);
                            r.leaseLossHoldOff = 4 * SEC;
                        },
                        d -> assertThat(d.action()).isEqualTo(new Campaign(8))),
                row(
                        "lease-loss hold-off: unreadable marker counts as no marker",
                        r -> {
                            r.term(7, 50).key(KEYS.resigned(), "seven", 55);
                            r.leaseLossHoldOff = 4 * SEC;
                        },
                        action(WaitOutOldLeader.class)),
                row(
                        "lease-loss hold-off: no term issued yet, nobody to wait for: campaign",
                        r -> r.leaseLossHoldOff = 4 * SEC,
                        d -> assertThat(d.action()).isEqualTo(new Campaign(1))),
                row(
                        "lease-loss hold-off off (default): a vanished record is campaigned for at once",
                        r -> r.term(7, 50),
                        d -> assertThat(d.action()).isEqualTo(new Campaign(8))),
                row(
                        "lease-loss hold-off: our own record revoked: term lost, then wait like everyone",
                        r -> {
                            r.term(7, 50);
                            r.held = new Held(OUR_LEASE, "n1", 7, false);
                            r.leaseLossHoldOff = 4 * SEC;
                        },
                        d -> {
                            assertThat(d.lost()).isEqualTo(LossReason.RECORD_GONE);
                            assertThat(d.action()).isEqualTo(new WaitOutOldLeader(4 * SEC));
                        }),
                row(
                        "lease-loss hold-off: a present leader is followed as always",
                        r -> {
                            r.term(7, 50).leader("w2", 7, OTHER_LEASE, "n2", 50);
                            r.leaseLossHoldOff = 4 * SEC;
                        },
                        action(Follow.class)),
                row(
                        "lease-loss hold-off and kill switch: the kill switch wins (follow)",
                        r -> {
                            r.term(7, 50).key(KEYS.paused(), "x", 70);
                            r.leaseLossHoldOff = 4 * SEC;
                        },
                        action(Follow.class)),
                row(
                        "no usable lease: wait for one",
                        r -> {
                            r.term(7, 50);
                            r.lease = new LeaseFacts(OUR_LEASE, LeaseKeeper.Health.GONE, 0);
                        },
                        action(WaitForLease.class)),
                row(
                        "SUSPECT lease, no leader: still campaign (the transaction decides; validity waits for a renewal)",
                        r -> {
                            r.term(7, 50);
                            r.lease = new LeaseFacts(OUR_LEASE, LeaseKeeper.Health.SUSPECT, NOW);
                        },
                        action(Campaign.class)),
                row(
                        "unreadable leader record: someone else's, follow",
                        r -> r.term(7, 50).key(KEYS.leader(), "not json", 50),
                        d -> assertThat(d.action()).isEqualTo(new Follow("leader record unreadable"))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void decides(String name, Row given, Consumer<Decision> expect) {
        expect.accept(ElectionDecision.decide(given.facts()));
    }

    static Stream<Arguments> outcomes() {
        return Stream.of(
                Arguments.of("committed", Optional.of(61L), null, CampaignOutcome.WON),
                Arguments.of("a compare failed", Optional.empty(), null, CampaignOutcome.LOST_RACE),
                Arguments.of(
                        "gRPC status: NOT_FOUND lease not found is definite",
                        Optional.empty(),
                        Status.NOT_FOUND
                                .withDescription("etcdserver: requested lease not found")
                                .asRuntimeException(),
                        CampaignOutcome.REJECTED),
                Arguments.of(
                        "DEADLINE_EXCEEDED: in doubt",
                        Optional.empty(),
                        Status.DEADLINE_EXCEEDED.asRuntimeException(),
                        CampaignOutcome.IN_DOUBT),
                Arguments.of(
                        "UNAVAILABLE: in doubt",
                        Optional.empty(),
                        Status.UNAVAILABLE.asRuntimeException(),
                        CampaignOutcome.IN_DOUBT),
                Arguments.of(
                        "local timeout: in doubt", Optional.empty(), new TimeoutException(), CampaignOutcome.IN_DOUBT));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("outcomes")
    void campaignOutcome(String name, Optional<Long> committedAt, Throwable error, CampaignOutcome expected) {
        assertThat(ElectionDecision.outcome(committedAt, error)).isEqualTo(expected);
    }

    static Stream<Arguments> closeRows() {
        byte[] ours = LeaderRecordCodec.encode(new LeaderRecord("me", 8, OUR_LEASE, "n5", Map.of(), Instant.EPOCH));
        byte[] foreign =
                LeaderRecordCodec.encode(new LeaderRecord("w2", 8, OTHER_LEASE, "n2", Map.of(), Instant.EPOCH));
        Map<String, InDoubt> doubt = Map.of("n5", new InDoubt(OUR_LEASE, 50));
        return Stream.of(
                Arguments.of(
                        "close with a campaign in doubt that committed: delete exactly that record",
                        Optional.of(new StoredKey(KEYS.leader(), 61, OUR_LEASE, ours)),
                        doubt,
                        true),
                Arguments.of(
                        "close, someone else leads: nothing to delete",
                        Optional.of(new StoredKey(KEYS.leader(), 61, OTHER_LEASE, foreign)),
                        doubt,
                        false),
                Arguments.of("close, no leader: nothing to delete", Optional.empty(), doubt, false),
                Arguments.of(
                        "close without campaigns in doubt: nothing to delete",
                        Optional.of(new StoredKey(KEYS.leader(), 61, OUR_LEASE, ours)),
                        Map.of(),
                        false),
                Arguments.of(
                        "close, nonce matches but the key is on another lease: not ours",
                        Optional.of(new StoredKey(KEYS.leader(), 61, OTHER_LEASE, ours)),
                        doubt,
                        false));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("closeRows")
    void recordToDeleteOnClose(String name, Optional<StoredKey> leader, Map<String, InDoubt> inDoubt, boolean delete) {
        Optional<StoredKey> d = ElectionDecision.recordToDeleteOnClose(leader, inDoubt);
        assertThat(d.isPresent()).isEqualTo(delete);
        d.ifPresent(k -> assertThat(k).isEqualTo(leader.get()));
    }
}
