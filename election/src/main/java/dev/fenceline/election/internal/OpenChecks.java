package dev.fenceline.election.internal;

import static dev.fenceline.election.internal.EtcdGateway.bytes;

import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionException;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.PutOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asks etcd, while a session opens, what would otherwise surface only later: whether the user may write the key
 * prefix, and whether a member runs a version whose leader can revoke live leases.
 */
final class OpenChecks {
    /** The session's category: operators (and tests) look for the version warning under it. */
    private static final Logger log = LoggerFactory.getLogger(DefaultElectionSession.class);

    private OpenChecks() {}

    /**
     * With RBAC, a role without readwrite on the key prefix would otherwise show up as elections that never
     * leave CANDIDATE. Probes both without changing anything: a read of the prefix, and a transaction whose
     * compare can never hold (a key with version -1) with a put under the prefix; etcd checks the permissions
     * of every key in a transaction before evaluating it.
     *
     * @throws ElectionException when etcd denies either probe
     */
    static void checkPermissions(ElectionConfig config, EtcdGateway etcd) {
        if (config.username() == null) {
            return;
        }
        String probe = config.keyPrefix() + ".permission-probe";
        try {
            etcd.get(config.keyPrefix()).get(config.callTimeout().toMillis() + 100, TimeUnit.MILLISECONDS);
            etcd.txn(t -> t.If(new Cmp(bytes(probe), Cmp.Op.LESS, CmpTarget.version(0)))
                            .Then(Op.put(bytes(probe), bytes(""), PutOption.DEFAULT)))
                    .get(config.callTimeout().toMillis() + 100, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ElectionException("interrupted while checking etcd permissions", e);
        } catch (Exception e) {
            if (EtcdFailure.code(e) == io.grpc.Status.Code.PERMISSION_DENIED) {
                throw new ElectionException(
                        "etcd user '" + config.username() + "' lacks readwrite permission on keyPrefix '"
                                + config.keyPrefix()
                                + "' (grant it: etcdctl role grant-permission <role> --prefix=true readwrite "
                                + config.keyPrefix() + "): " + EtcdFailure.describe(e),
                        EtcdFailure.unwrap(e));
            }
            log.warn(
                    "could not check etcd permissions on keyPrefix {} ({}); continuing",
                    config.keyPrefix(),
                    EtcdFailure.describe(e));
        }
    }

    /**
     * Reads every member's server version (best effort, one status call each, bounded by callTimeout) and warns
     * loudly for versions whose leader may revoke live leases after a stall (see {@link EtcdVersions}). The
     * gauge {@code fenceline.election.etcd.lease.revocation.bug} counts the affected members seen at open().
     */
    static void checkServerVersions(ElectionConfig config, EtcdGateway etcd, ElectionMetrics metrics) {
        List<String> affected = new ArrayList<>();
        List<String> seen = new ArrayList<>();
        for (int i = 0; i < etcd.endpointCount(); i++) {
            String uri = etcd.endpoint(i).uri;
            try {
                String v = etcd.status(i)
                        .get(config.callTimeout().toMillis() + 100, TimeUnit.MILLISECONDS)
                        .getVersion();
                seen.add(uri + "=" + v);
                if (EtcdVersions.hasLeaseRevocationBug(v)) {
                    affected.add(uri + "=" + v);
                }
            } catch (Exception e) {
                seen.add(uri + "=unknown (" + EtcdFailure.describe(e) + ")");
            }
        }
        metrics.leaseRevocationBugMembers(affected.size());
        if (!affected.isEmpty()) {
            log.warn(
                    "etcd members {} run a version whose leader can revoke live leases after a stall (slow disk, CPU "
                            + "starvation; fixed in etcd 3.4.31 / 3.5.13): a successor may then win before this leader's local "
                            + "deadline. Leadership.isValidNow() cannot protect against that; the resource fence must. Upgrade etcd.",
                    affected);
        } else {
            log.info("etcd server versions: {}", seen);
        }
    }
}
