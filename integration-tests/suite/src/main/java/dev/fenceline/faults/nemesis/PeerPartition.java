package dev.fenceline.faults.nemesis;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.EtcdMember;
import java.io.IOException;
import java.math.BigInteger;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Minority partition of an etcd cluster on loopback, without network namespaces or iptables: every member's peer
 * (Raft) traffic is routed through a {@link TcpProxy} — the members' advertised peer URLs are changed to the proxies
 * with {@code etcdctl member update}, then each member is restarted once so no direct connection survives — and each
 * proxied connection is attributed to the member process that opened it ({@link SocketOwners}). Isolating member X
 * blackholes X's proxy (everything sent to X) and, in the other proxies, the connections X opened (everything X
 * sends). Clients still reach X on its client port: it is cut off from its peers only.
 */
public final class PeerPartition implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PeerPartition.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final EtcdCluster cluster;
    private final Map<String, TcpProxy> proxies = new HashMap<>();
    private volatile String isolated;

    private PeerPartition(EtcdCluster cluster) {
        this.cluster = cluster;
    }

    /** Puts proxies in front of every member's peer port and re-routes the cluster through them. */
    public static PeerPartition install(EtcdCluster cluster) {
        PeerPartition p = new PeerPartition(cluster);
        for (EtcdMember m : cluster.members()) {
            p.proxies.put(m.name(), TcpProxy.start("peer-" + m.name(), 0, TcpProxy.loopback(m.peerPort()), p::origin));
        }
        p.reroute();
        return p;
    }

    /** Re-applies the routing after the cluster was rebuilt from nothing (new member ids, direct peer URLs). */
    public void reroute() {
        heal();
        Map<String, String> ids = memberIds();
        for (EtcdMember m : cluster.members()) {
            String id = Objects.requireNonNull(ids.get(m.name()), "no etcd member id for " + m.name() + ": " + ids);
            retry(() -> cluster.etcdctl(
                    "member",
                    "update",
                    id,
                    "--peer-urls=" + proxies.get(m.name()).endpoint()));
        }
        // Existing direct peer connections would bypass the proxies: restart every member once, one at a time.
        for (EtcdMember m : cluster.members()) {
            m.kill();
            m.restart();
            cluster.awaitHealthy(Duration.ofSeconds(30));
        }
        log.info("etcd peer traffic now flows through proxies {}", proxies.values());
    }

    private Map<String, String> memberIds() {
        String json = retry(() -> cluster.etcdctl("member", "list", "-w", "json"));
        Map<String, String> ids = new HashMap<>();
        try {
            JsonNode root = JSON.readTree(json);
            for (JsonNode n : root.path("members")) {
                ids.put(n.path("name").asText(), new BigInteger(n.path("ID").asText()).toString(16));
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot parse etcdctl member list: " + json, e);
        }
        return ids;
    }

    private static String retry(java.util.function.Supplier<String> call) {
        RuntimeException last = null;
        for (int i = 0; i < 5; i++) {
            try {
                return call.get();
            } catch (RuntimeException e) {
                last = e;
                sleep(1000);
            }
        }
        throw last;
    }

    /** Which member opened this connection (null if none of the running members). */
    private String origin(java.net.Socket accepted) {
        Map<Long, String> byPid = new HashMap<>();
        for (EtcdMember m : cluster.members()) {
            if (m.isRunning()) {
                byPid.put(m.pid(), m.name());
            }
        }
        long pid = SocketOwners.ownerOf(accepted, new ArrayList<>(byPid.keySet()));
        return byPid.get(pid);
    }

    /** Cuts member {@code name} off from its peers (both directions). Clients can still connect to it. */
    public void isolate(String name) {
        if (!proxies.containsKey(name)) {
            throw new IllegalArgumentException("unknown etcd member " + name + "; members: " + proxies.keySet());
        }
        isolated = name;
        proxies.forEach((member, proxy) -> {
            if (member.equals(name)) {
                proxy.blackhole();
            } else {
                proxy.blackhole(c -> name.equals(c.origin()));
            }
        });
        log.info("etcd member {} isolated from its peers", name);
    }

    public void heal() {
        proxies.values().forEach(TcpProxy::heal);
        if (isolated != null) {
            log.info("etcd member {} rejoined its peers", isolated);
        }
        isolated = null;
    }

    public String isolated() {
        return isolated;
    }

    /** Connections through the proxies, by proxy name, with their attributed origin (diagnostics). */
    public Map<String, List<String>> connectionOrigins() {
        Map<String, List<String>> out = new HashMap<>();
        proxies.forEach((m, p) -> out.put(
                m, p.connections().stream().map(c -> String.valueOf(c.origin())).toList()));
        return out;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        proxies.values().forEach(TcpProxy::close);
    }
}
