package dev.fenceline.faults.nemesis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class TcpProxyTest {
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : closeables) {
            c.close();
        }
    }

    /** An echo server answering each line-less chunk with a prefix, so we can tell two servers apart. */
    private ServerSocket echo(String prefix) throws IOException {
        ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        closeables.add(s);
        Thread t = new Thread(() -> {
            while (!s.isClosed()) {
                try {
                    Socket c = s.accept();
                    Thread h = new Thread(() -> {
                        try (c;
                                InputStream in = c.getInputStream();
                                OutputStream out = c.getOutputStream()) {
                            byte[] b = new byte[1024];
                            int n;
                            while ((n = in.read(b)) > 0) {
                                out.write(prefix.getBytes(StandardCharsets.UTF_8));
                                out.write(b, 0, n);
                                out.flush();
                            }
                        } catch (IOException ignored) {
                            // client gone
                        }
                    });
                    h.setDaemon(true);
                    h.start();
                } catch (IOException e) {
                    return;
                }
            }
        });
        t.setDaemon(true);
        t.start();
        return s;
    }

    private Socket connect(TcpProxy p) throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), p.port()), 2000);
        s.setSoTimeout(3000);
        closeables.add(s);
        return s;
    }

    private static String roundTrip(Socket s, String msg, int expectedLen) throws IOException {
        s.getOutputStream().write(msg.getBytes(StandardCharsets.UTF_8));
        s.getOutputStream().flush();
        byte[] b = new byte[expectedLen];
        new DataInputStream(s.getInputStream()).readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    @Test
    void forwardsBytesBothWays() throws IOException {
        ServerSocket up = echo("A:");
        TcpProxy p = TcpProxy.start("t", TcpProxy.loopback(up.getLocalPort()));
        closeables.add(p);
        assertThat(roundTrip(connect(p), "hello", 7)).isEqualTo("A:hello");
    }

    @Test
    void blackholeHoldsBytesOfExistingAndNewConnectionsUntilHealed() throws Exception {
        ServerSocket up = echo("A:");
        TcpProxy p = TcpProxy.start("t", TcpProxy.loopback(up.getLocalPort()));
        closeables.add(p);
        Socket existing = connect(p);
        assertThat(roundTrip(existing, "one", 5)).isEqualTo("A:one");

        p.blackhole();
        existing.setSoTimeout(700);
        existing.getOutputStream().write("two".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> existing.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
        Socket fresh = connect(p); // accepted, but nothing is forwarded
        fresh.setSoTimeout(700);
        fresh.getOutputStream().write("new".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> fresh.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);

        p.heal();
        existing.setSoTimeout(5000);
        fresh.setSoTimeout(5000);
        byte[] b = new byte[5];
        new DataInputStream(existing.getInputStream()).readFully(b);
        assertThat(new String(b, StandardCharsets.UTF_8)).isEqualTo("A:two");
        new DataInputStream(fresh.getInputStream()).readFully(b);
        assertThat(new String(b, StandardCharsets.UTF_8)).isEqualTo("A:new");
    }

    @Test
    void blackholeCanTargetSomeConnectionsOnly() throws Exception {
        ServerSocket up = echo("A:");
        AtomicLong n = new AtomicLong();
        TcpProxy p = TcpProxy.start("t", 0, TcpProxy.loopback(up.getLocalPort()), s -> "c" + n.incrementAndGet());
        closeables.add(p);
        Socket c1 = connect(p);
        Socket c2 = connect(p);
        assertThat(roundTrip(c1, "x", 3)).isEqualTo("A:x");
        assertThat(roundTrip(c2, "y", 3)).isEqualTo("A:y");
        p.blackhole(c -> "c1".equals(c.origin()));
        c1.setSoTimeout(700);
        c1.getOutputStream().write("z".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> c1.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
        assertThat(roundTrip(c2, "w", 3)).isEqualTo("A:w");
        p.heal();
    }

    @Test
    void changingTheUpstreamResetsConnectionsAndSendsNewOnesToTheNewServer() throws Exception {
        ServerSocket a = echo("A:");
        ServerSocket b = echo("B:");
        TcpProxy p = TcpProxy.start("t", TcpProxy.loopback(a.getLocalPort()));
        closeables.add(p);
        Socket s = connect(p);
        assertThat(roundTrip(s, "1", 3)).isEqualTo("A:1");
        p.upstream(TcpProxy.loopback(b.getLocalPort()));
        await().untilAsserted(() -> assertThat(p.connections()).isEmpty());
        assertThat(roundTrip(connect(p), "2", 3)).isEqualTo("B:2");
    }

    @Test
    void socketOwnerIsTheProcessThatOpenedTheConnection() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
                Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
                Socket accepted = server.accept()) {
            long me = ProcessHandle.current().pid();
            assertThat(client.isConnected()).isTrue();
            assertThat(SocketOwners.ownerOf(accepted, List.of(999_999_999L, me)))
                    .isEqualTo(me);
            assertThat(SocketOwners.ownerOf(accepted, List.of(999_999_999L))).isEqualTo(-1);
        }
    }
}
