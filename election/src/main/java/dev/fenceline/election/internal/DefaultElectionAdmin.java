package dev.fenceline.election.internal;

import static dev.fenceline.election.internal.EtcdGateway.bytes;
import static dev.fenceline.election.internal.EtcdGateway.string;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionException;
import dev.fenceline.election.ElectionKeys;
import dev.fenceline.election.LeaderRecord;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Blocking operator actions; every call bounded by the call timeout, optimistic loops bounded in count. */
public final class DefaultElectionAdmin implements ElectionAdmin {
    private static final Logger log = LoggerFactory.getLogger(DefaultElectionAdmin.class);
    private static final int MAX_CAS_ATTEMPTS = 10;
    private final ElectionConfig config;
    private final EtcdGateway etcd;

    private DefaultElectionAdmin(ElectionConfig config) {
        this.config = config;
        this.etcd = new EtcdGateway(config, ElectionMetrics.forAdmin(config.meterRegistry()));
    }

    /** See {@link ElectionAdmin#connect}. */
    public static DefaultElectionAdmin connect(ElectionConfig config) {
        if (config == null) {
            throw new ElectionException("config must not be null");
        }
        DefaultElectionAdmin a = new DefaultElectionAdmin(config);
        long start = System.nanoTime();
        Throwable last = null;
        EtcdReachability.TlsQuestion tlsQuestion =
                new EtcdReachability.TlsQuestion(config.endpoints(), config.callTimeout());
        Backoff b = new Backoff(Duration.ofMillis(50), Duration.ofMillis(500));
        while (System.nanoTime() - start < config.connectTimeout().toNanos()) {
            try {
                a.etcd.get(config.keyPrefix()).get();
                return a;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                a.close();
                throw new ElectionException("interrupted while connecting to etcd", e);
            } catch (ExecutionException e) {
                last = EtcdFailure.causeOf(e);
                String tls = tlsQuestion.speakingTls(last);
                if (tls != null) {
                    a.close();
                    throw new ElectionException(
                            EtcdReachability.speaksTlsMessage("cannot connect election admin", tls), last, false);
                }
                if (EtcdReachability.classify(last) == EtcdReachability.Verdict.PERMANENT) {
                    a.close(); // not etcd, TLS, refused (credentials, permission): retrying cannot help
                    throw new ElectionException(
                            "cannot connect election admin: etcd at " + config.endpoints()
                                    + (EtcdFailure.isDefinite(last)
                                            ? " refused a read of keyPrefix '" + config.keyPrefix() + "'"
                                                    + (config.username() != null
                                                            ? " by user '" + config.username() + "'"
                                                            : "")
                                            : " cannot be used")
                                    + ": " + EtcdReachability.notRetried(last),
                            last,
                            false);
                }
            }
            try {
                Thread.sleep(b.next().toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        a.close();
        throw new ElectionException(
                "cannot connect election admin: no etcd endpoint of " + config.endpoints()
                        + " answered a linearizable read within connectTimeout="
                        + config.connectTimeout().toMillis()
                        + "ms (last error: " + LeaseKeeper.describe(last) + EtcdReachability.transientHint(last) + ")",
                last,
                true);
    }

    @Override
    public Optional<LeaderRecord> leader(String election) {
        ElectionKeys k = keys(election);
        GetResponse r = await(etcd.get(k.leader()), "read " + k.leader());
        if (r.getKvs().isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(
                    LeaderRecordCodec.decode(r.getKvs().get(0).getValue().getBytes()));
        } catch (IllegalArgumentException e) {
            throw new ElectionException("leader record " + k.leader() + " is malformed: " + e.getMessage(), e);
        }
    }

    @Override
    public void pause(String election) {
        ElectionKeys k = keys(election);
        String value = "paused at " + Instant.now() + " by " + System.getProperty("user.name", "?");
        await(etcd.txn(t -> t.Then(Op.put(bytes(k.paused()), bytes(value), PutOption.DEFAULT))), "write " + k.paused());
        log.info("election paused (kill switch set): election={} key={}", election, k.paused());
    }

    @Override
    public void resume(String election) {
        ElectionKeys k = keys(election);
        await(etcd.txn(t -> t.Then(Op.delete(bytes(k.paused()), DeleteOption.DEFAULT))), "delete " + k.paused());
        log.info("election resumed (kill switch removed): election={} key={}", election, k.paused());
    }

    @Override
    public boolean isPaused(String election) {
        ElectionKeys k = keys(election);
        return !await(etcd.get(k.paused()), "read " + k.paused()).getKvs().isEmpty();
    }

    @Override
    public Optional<Long> requestResign(String election) {
        ElectionKeys k = keys(election);
        for (int i = 0; i < MAX_CAS_ATTEMPTS; i++) {
            GetResponse r = await(etcd.get(k.leader()), "read " + k.leader());
            if (r.getKvs().isEmpty()) {
                return Optional.empty();
            }
            KeyValue kv = r.getKvs().get(0);
            long term;
            try {
                term = LeaderRecordCodec.decode(kv.getValue().getBytes()).term();
            } catch (IllegalArgumentException e) {
                throw new ElectionException("leader record " + k.leader() + " is malformed: " + e.getMessage(), e);
            }
            TxnResponse t = await(
                    etcd.txn(txn -> txn.If(new Cmp(
                                    bytes(k.leader()), Cmp.Op.EQUAL, CmpTarget.modRevision(kv.getModRevision())))
                            .Then(Op.put(bytes(k.resignRequest()), bytes(Long.toString(term)), PutOption.DEFAULT))),
                    "write " + k.resignRequest());
            if (t.isSucceeded()) {
                log.info("resign requested: election={} term={}", election, term);
                return Optional.of(term);
            }
        }
        throw new ElectionException("requestResign(" + election + "): leader changed " + MAX_CAS_ATTEMPTS
                + " times while asking; try again");
    }

    @Override
    public long ensureTermAtLeast(String election, long term) {
        Terms.checkFloor(election, term);
        ElectionKeys k = keys(election);
        for (int i = 0; i < MAX_CAS_ATTEMPTS; i++) {
            GetResponse r = await(etcd.get(k.termFloor()), "read " + k.termFloor());
            long floor = 0;
            long mod = 0;
            if (!r.getKvs().isEmpty()) {
                KeyValue kv = r.getKvs().get(0);
                mod = kv.getModRevision();
                try {
                    floor = Long.parseLong(string(kv.getValue()).trim());
                } catch (NumberFormatException e) {
                    floor = 0; // unusable floor: overwrite it with a valid one (still only upwards from our view)
                }
            }
            if (floor >= term) {
                return floor;
            }
            long modRev = mod;
            TxnResponse t = await(
                    etcd.txn(txn -> txn.If(new Cmp(bytes(k.termFloor()), Cmp.Op.EQUAL, CmpTarget.modRevision(modRev)))
                            .Then(Op.put(bytes(k.termFloor()), bytes(Long.toString(term)), PutOption.DEFAULT))),
                    "write " + k.termFloor());
            if (t.isSucceeded()) {
                log.info("term floor raised: election={} floor={}", election, term);
                return term;
            }
        }
        throw new ElectionException("ensureTermAtLeast(" + election + ", " + term + "): " + k.termFloor() + " changed "
                + MAX_CAS_ATTEMPTS + " times while writing; try again");
    }

    @Override
    public long currentTerm(String election) {
        ElectionKeys k = keys(election);
        GetResponse r = await(etcd.get(k.term()), "read " + k.term());
        if (r.getKvs().isEmpty()) {
            return 0;
        }
        String v = string(r.getKvs().get(0).getValue()).trim();
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new ElectionException(k.term() + " is not a decimal number: '" + v + "'");
        }
    }

    @Override
    public void close() {
        etcd.close();
    }

    private ElectionKeys keys(String election) {
        return config.keys(election);
    }

    private <T> T await(CompletableFuture<T> f, String what) {
        try {
            return f.get(config.callTimeout().toMillis() + 200, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ElectionException("interrupted: " + what, e);
        } catch (Exception e) {
            throw new ElectionException(
                    "etcd call failed (" + what + ", callTimeout="
                            + config.callTimeout().toMillis() + "ms): " + LeaseKeeper.describe(e),
                    LeaseKeeper.unwrap(e));
        }
    }
}
