package dev.fenceline.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A single etcd member as production runs it: client TLS with a test CA, client certificates required
 * ({@code --client-cert-auth}) and RBAC enabled. Certificates are generated with openssl into the data folder
 * (a CA, a server certificate for 127.0.0.1, a client certificate, the same client key in an expired certificate,
 * and a second CA nobody trusts). Users:
 * {@code root}, an application user limited to one prefix, and a user whose role covers another prefix.
 * The process is registered with the {@link Reaper}; {@link #close()} stops it and deletes everything.
 */
public final class SecureEtcd implements AutoCloseable {
    public static final String ROOT_PASSWORD = "root-secret";

    private final Path dir;
    private final int clientPort;
    private final Process process;

    private SecureEtcd(Path dir, int clientPort, Process process) {
        this.dir = dir;
        this.clientPort = clientPort;
        this.process = process;
    }

    /**
     * @param user        application user, granted readwrite on {@code prefix} (as a key range)
     * @param password    its password
     * @param prefix      the key prefix it may use, e.g. {@code /fenceline/}
     * @param otherUser   a user granted readwrite only on {@code /elsewhere/}
     */
    public static SecureEtcd start(String user, String password, String prefix, String otherUser) {
        Path etcd = EtcdCluster.binary("etcd", "fenceline.etcd.bin", "FENCELINE_ETCD_BIN");
        Path etcdctl = EtcdCluster.binary("etcdctl", "fenceline.etcdctl.bin", "FENCELINE_ETCDCTL_BIN");
        Path openssl = Processes.onPath("openssl");
        if (openssl == null) {
            throw new InfrastructureException(
                    "openssl was not found on PATH; it generates the test certificates " + "(Debian package openssl)");
        }
        Path dir;
        try {
            Path base = Files.isDirectory(Path.of("target"))
                    ? Path.of("target")
                    : Path.of(System.getProperty("java.io.tmpdir"));
            dir = Files.createTempDirectory(base.toAbsolutePath(), "etcd-tls-");
        } catch (IOException e) {
            throw new InfrastructureException("cannot create the TLS etcd folder: " + e.getMessage(), e);
        }
        Reaper.get().deleteOnDeath(dir);
        certificates(openssl, dir);
        int client = FreePorts.next();
        int peer = FreePorts.next();
        FreePorts.requireFree(client, "TLS etcd client");
        FreePorts.requireFree(peer, "TLS etcd peer");
        String url = "https://127.0.0.1:" + client;
        List<String> cmd = List.of(
                etcd.toString(),
                "--name",
                "s1",
                "--data-dir",
                dir.resolve("data").toString(),
                "--listen-client-urls",
                url,
                "--advertise-client-urls",
                url,
                "--listen-peer-urls",
                "http://127.0.0.1:" + peer,
                "--initial-advertise-peer-urls",
                "http://127.0.0.1:" + peer,
                "--initial-cluster",
                "s1=http://127.0.0.1:" + peer,
                "--initial-cluster-state",
                "new",
                "--cert-file",
                dir.resolve("server.crt").toString(),
                "--key-file",
                dir.resolve("server.key").toString(),
                "--trusted-ca-file",
                dir.resolve("ca.crt").toString(),
                "--client-cert-auth",
                "--logger",
                "zap",
                "--log-level",
                "warn");
        Process p;
        try {
            p = new ProcessBuilder(cmd)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(
                            dir.resolve("etcd.log").toFile()))
                    .start();
        } catch (IOException e) {
            throw new InfrastructureException("cannot start TLS etcd (" + etcd + "): " + e.getMessage(), e);
        }
        Reaper.get().watch(p.pid());
        SecureEtcd s = new SecureEtcd(dir, client, p);
        try {
            s.awaitUp(etcdctl, Duration.ofSeconds(30));
            s.ctl(etcdctl, "user", "add", "root:" + ROOT_PASSWORD);
            s.ctl(etcdctl, "user", "add", user + ":" + password);
            s.ctl(etcdctl, "role", "add", "election");
            s.ctl(etcdctl, "role", "grant-permission", "election", "--prefix=true", "readwrite", prefix);
            s.ctl(etcdctl, "user", "grant-role", user, "election");
            s.ctl(etcdctl, "user", "add", otherUser + ":" + password);
            s.ctl(etcdctl, "role", "add", "elsewhere");
            s.ctl(etcdctl, "role", "grant-permission", "elsewhere", "--prefix=true", "readwrite", "/elsewhere/");
            s.ctl(etcdctl, "user", "grant-role", otherUser, "elsewhere");
            s.ctl(etcdctl, "auth", "enable");
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
        return s;
    }

    private static void certificates(Path openssl, Path dir) {
        String o = openssl.toString();
        String days = "2";
        run(
                dir,
                o,
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                days,
                "-subj",
                "/CN=fenceline-test-ca");
        run(
                dir,
                o,
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "other-ca.key",
                "-out",
                "other-ca.crt",
                "-days",
                days,
                "-subj",
                "/CN=untrusted-ca");
        write(
                dir.resolve("server.ext"),
                "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n");
        write(dir.resolve("client.ext"), "extendedKeyUsage=clientAuth\n");
        for (String[] leaf : new String[][] {{"server", "/CN=127.0.0.1"}, {"client", "/CN=fenceline-client"}}) {
            run(
                    dir,
                    o,
                    "req",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-keyout",
                    leaf[0] + ".key",
                    "-out",
                    leaf[0] + ".csr",
                    "-subj",
                    leaf[1]);
            run(
                    dir,
                    o,
                    "x509",
                    "-req",
                    "-in",
                    leaf[0] + ".csr",
                    "-CA",
                    "ca.crt",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-out",
                    leaf[0] + ".crt",
                    "-days",
                    days,
                    "-extfile",
                    leaf[0] + ".ext");
        }
        // the same client key in a certificate whose validity ended in 2020: `openssl ca` takes explicit dates
        write(
                dir.resolve("ca.cnf"),
                "[ca]\ndefault_ca=test_ca\n[test_ca]\ndatabase=index.txt\nnew_certs_dir=.\n"
                        + "serial=serial\ndefault_md=sha256\npolicy=any\n[any]\ncommonName=supplied\n"
                        + "[client_ext]\nextendedKeyUsage=clientAuth\n");
        write(dir.resolve("index.txt"), "");
        write(dir.resolve("serial"), "1000\n");
        run(
                dir,
                o,
                "ca",
                "-batch",
                "-config",
                "ca.cnf",
                "-cert",
                "ca.crt",
                "-keyfile",
                "ca.key",
                "-in",
                "client.csr",
                "-out",
                "expired-client.crt",
                "-startdate",
                "20200101000000Z",
                "-enddate",
                "20200102000000Z",
                "-extensions",
                "client_ext",
                "-notext");
        // Java's PEM reader (netty) wants PKCS#8 keys
        run(dir, o, "pkcs8", "-topk8", "-nocrypt", "-in", "client.key", "-out", "client.pk8.key");
    }

    private static void run(Path dir, String... cmd) {
        Processes.runOrFail(List.of(cmd), Duration.ofSeconds(60), dir, Map.of());
    }

    private static void write(Path p, String s) {
        try {
            Files.writeString(p, s);
        } catch (IOException e) {
            throw new InfrastructureException("cannot write " + p + ": " + e.getMessage(), e);
        }
    }

    private List<String> ctlArgs(Path etcdctl, String... args) {
        List<String> cmd = new ArrayList<>(List.of(
                etcdctl.toString(),
                "--endpoints=" + endpoint(),
                "--cacert=" + caFile(),
                "--cert=" + clientCertFile(),
                "--key=" + dir.resolve("client.key"),
                "--user=root:" + ROOT_PASSWORD));
        cmd.addAll(List.of(args));
        return cmd;
    }

    private void ctl(Path etcdctl, String... args) {
        List<String> cmd = ctlArgs(etcdctl, args);
        if (args.length > 0 && args[0].equals("user") && args[1].equals("add") && args[2].startsWith("root:")) {
            cmd.removeIf(a -> a.startsWith("--user=")); // before root exists
        }
        Processes.Result r = Processes.run(cmd, Duration.ofSeconds(30), dir, Map.of("ETCDCTL_API", "3"));
        if (!r.ok() && !(r.stderr() + r.stdout()).contains("authentication is not enabled")) {
            // before `auth enable` a --user is ignored; any other failure is real
            throw new InfrastructureException("etcdctl " + String.join(" ", args) + " failed (exit " + r.exitCode()
                    + "): " + r.stderr() + r.stdout());
        }
    }

    private void awaitUp(Path etcdctl, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "";
        while (System.nanoTime() < deadline && process.isAlive()) {
            List<String> cmd = ctlArgs(etcdctl, "endpoint", "health");
            cmd.removeIf(a -> a.startsWith("--user="));
            Processes.Result r = Processes.run(cmd, Duration.ofSeconds(5), dir, Map.of("ETCDCTL_API", "3"));
            if (r.ok()) {
                return;
            }
            last = r.stderr();
            PostgresServer.sleepQuietly(100);
        }
        throw new InfrastructureException("TLS etcd " + endpoint() + " not healthy within " + timeout + " (" + last
                + "); log: " + dir.resolve("etcd.log"));
    }

    public String endpoint() {
        return "https://127.0.0.1:" + clientPort;
    }

    public Path caFile() {
        return dir.resolve("ca.crt");
    }

    /** A CA that did not sign the server certificate. */
    public Path untrustedCaFile() {
        return dir.resolve("other-ca.crt");
    }

    public Path clientCertFile() {
        return dir.resolve("client.crt");
    }

    /** A certificate for {@link #clientKeyFile()} signed by the trusted CA whose validity ended on 2020-01-02. */
    public Path expiredClientCertFile() {
        return dir.resolve("expired-client.crt");
    }

    /** The client key in PKCS#8 PEM (what Java's TLS stack reads). */
    public Path clientKeyFile() {
        return dir.resolve("client.pk8.key");
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(15, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
        }
        Reaper.get().forget(process.pid());
        Processes.deleteTree(dir);
    }
}
