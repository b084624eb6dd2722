package dev.fenceline.faults.nemesis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A controllable TCP proxy on 127.0.0.1: forwards every connection to an upstream address, and can
 * <em>blackhole</em> connections — matching ones stop moving bytes in both directions (data stays queued, like
 * packets dropped by a partitioned network; nothing is reset) and new ones are accepted but never forwarded —
 * until {@link #heal()}, when queued bytes flow again, as TCP retransmission would deliver them.
 *
 * <p>The listening port is fixed for the proxy's life; the upstream can be changed ({@link #upstream(InetSocketAddress)}),
 * which is how a client keeps one endpoint while its server is replaced.
 */
public final class TcpProxy implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TcpProxy.class);
    private static final Predicate<Connection> NONE = c -> false;
    private static final Predicate<Connection> ALL = c -> true;

    private final String name;
    private final ServerSocket server;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final Object gate = new Object();
    private volatile InetSocketAddress upstream;
    private volatile Predicate<Connection> blocked = NONE;
    private volatile boolean closed;
    private final Thread acceptor;
    private final ConnectionClassifier classifier;

    /** Decides, once per accepted connection, who is on the other end (e.g. which process opened it). */
    public interface ConnectionClassifier {
        String classify(Socket accepted);
    }

    /** One proxied connection. {@link #origin()} is what the classifier said about the client side. */
    public final class Connection {
        private final Socket client;
        private final String origin;
        private volatile Socket up;

        private Connection(Socket client, String origin) {
            this.client = client;
            this.origin = origin;
        }

        public String origin() {
            return origin;
        }

        public int clientPort() {
            return client.getPort();
        }

        boolean isBlocked() {
            return blocked.test(this);
        }

        void close() {
            closeQuietly(client);
            closeQuietly(up);
            connections.remove(this);
        }
    }

    private TcpProxy(String name, int port, InetSocketAddress upstream, ConnectionClassifier classifier)
            throws IOException {
        this.name = name;
        this.upstream = Objects.requireNonNull(upstream);
        this.classifier = classifier;
        this.server = new ServerSocket();
        this.server.setReuseAddress(true);
        this.server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 128);
        this.acceptor = new Thread(this::acceptLoop, "tcp-proxy-" + name);
        this.acceptor.setDaemon(true);
        this.acceptor.start();
    }

    /** A proxy on a free loopback port. */
    public static TcpProxy start(String name, InetSocketAddress upstream) {
        return start(name, 0, upstream, null);
    }

    public static TcpProxy start(String name, int port, InetSocketAddress upstream, ConnectionClassifier classifier) {
        try {
            return new TcpProxy(name, port, upstream, classifier);
        } catch (IOException e) {
            throw new IllegalStateException(
                    "cannot start TCP proxy " + name + " on port " + port + ": " + e.getMessage(), e);
        }
    }

    public static InetSocketAddress loopback(int port) {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
    }

    public String name() {
        return name;
    }

    public int port() {
        return server.getLocalPort();
    }

    public String endpoint() {
        return "http://127.0.0.1:" + port();
    }

    public InetSocketAddress upstream() {
        return upstream;
    }

    /** Points new connections at another upstream; existing connections are closed (their server is gone). */
    public void upstream(InetSocketAddress newUpstream) {
        this.upstream = Objects.requireNonNull(newUpstream);
        resetConnections();
    }

    /** Blackholes every connection, current and new. */
    public void blackhole() {
        blackhole(ALL);
    }

    /** Blackholes the connections matching {@code which} (evaluated continuously, current and new). */
    public void blackhole(Predicate<Connection> which) {
        this.blocked = Objects.requireNonNull(which);
        log.debug("proxy {} blackholing", name);
    }

    /** Lets every connection move bytes again. */
    public void heal() {
        synchronized (gate) {
            this.blocked = NONE;
            gate.notifyAll();
        }
        log.debug("proxy {} healed", name);
    }

    public boolean isBlackholing() {
        return blocked != NONE;
    }

    /** Closes all current connections (clients see a reset/EOF and reconnect). */
    public void resetConnections() {
        for (Connection c : new ArrayList<>(connections)) {
            c.close();
        }
    }

    public List<Connection> connections() {
        return List.copyOf(connections);
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                if (!closed) {
                    log.warn("proxy {} accept failed: {}", name, e.toString());
                }
                return;
            }
            String origin = null;
            if (classifier != null) {
                try {
                    origin = classifier.classify(client);
                } catch (RuntimeException e) {
                    log.debug("proxy {} cannot classify connection: {}", name, e.toString());
                }
            }
            Connection c = new Connection(client, origin);
            connections.add(c);
            Thread t = new Thread(() -> open(c), "tcp-proxy-" + name + "-conn");
            t.setDaemon(true);
            t.start();
        }
    }

    private void open(Connection c) {
        try {
            c.client.setTcpNoDelay(true);
            awaitUnblocked(c);
            if (closed || c.client.isClosed()) {
                c.close();
                return;
            }
            Socket up = new Socket();
            up.setTcpNoDelay(true);
            up.connect(upstream, 5_000);
            c.up = up;
            Thread back = new Thread(() -> pump(c, up, c.client), "tcp-proxy-" + name + "-down");
            back.setDaemon(true);
            back.start();
            pump(c, c.client, up);
        } catch (IOException e) {
            c.close();
        }
    }

    private void pump(Connection c, Socket from, Socket to) {
        byte[] buf = new byte[16 * 1024];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            while (!closed) {
                awaitUnblocked(c);
                int n = in.read(buf);
                if (n < 0) {
                    break;
                }
                awaitUnblocked(c);
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (SocketException e) {
            // closed by the other side or by us
        } catch (IOException e) {
            log.debug("proxy {} pump ended: {}", name, e.toString());
        } finally {
            c.close();
        }
    }

    private void awaitUnblocked(Connection c) {
        synchronized (gate) {
            while (!closed && c.isBlocked() && !c.client.isClosed()) {
                try {
                    gate.wait(200);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        synchronized (gate) {
            gate.notifyAll();
        }
        closeQuietly(server);
        resetConnections();
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception ignored) {
                // best effort
            }
        }
    }

    @Override
    public String toString() {
        return "TcpProxy[" + name + " :" + port() + " -> " + upstream + (isBlackholing() ? " BLACKHOLE" : "") + "]";
    }
}
