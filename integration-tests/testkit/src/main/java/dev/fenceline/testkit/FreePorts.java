package dev.fenceline.testkit;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Free TCP ports on 127.0.0.1. A port handed out once is not handed out again by this JVM, so two servers
 * started back to back cannot pick the same port before either has bound it.
 */
public final class FreePorts {
    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    private FreePorts() {}

    /** A port that was free on 127.0.0.1 a moment ago and that this JVM has not handed out before. */
    public static int next() {
        for (int attempt = 0; attempt < 200; attempt++) {
            int port;
            try (ServerSocket socket = new ServerSocket()) {
                socket.setReuseAddress(false);
                socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                port = socket.getLocalPort();
            } catch (IOException e) {
                throw new InfrastructureException("cannot bind any port on 127.0.0.1: " + e.getMessage(), e);
            }
            if (HANDED_OUT.add(port)) {
                return port;
            }
        }
        throw new InfrastructureException("no free port on 127.0.0.1 after 200 attempts");
    }

    /** Fails with a clear message when {@code port} on 127.0.0.1 is taken by another process. */
    public static void requireFree(int port, String what) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        } catch (IOException e) {
            throw new InfrastructureException(what + ": port " + port + " on 127.0.0.1 is already in use ("
                    + e.getMessage() + "); stop whatever listens there (ss -ltnp 'sport = :" + port
                    + "') or leave the port unset so a free one is chosen");
        }
    }
}
