package dev.fenceline.sample.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.testkit.EtcdCluster;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.EtcdClusterExtension;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/** Bad input against real servers: a clear message, a non-zero exit and nothing changed (database and etcd). */
@ExtendWith({PostgresExtension.class, EtcdClusterExtension.class})
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CliBadInputIT {
    private SampleProcesses s;

    @BeforeAll
    void migrateAndSeed(TestDatabase db, EtcdCluster etcd) throws Exception {
        s = new SampleProcesses(db, etcd, "badinput");
        assertThat(s.cli("migrate").exit()).isZero();
        assertThat(s.cli("seed", "--payments", "10").exit()).isZero();
    }

    private void assertNothingChanged() throws Exception {
        assertThat(s.scalar("SELECT count(*) FROM settlement.payment")).isEqualTo(10);
        assertThat(s.scalar("SELECT count(*) FROM fencing.break_glass_log")).isEqualTo(1);
        assertThat(s.etcd.etcdctl("get", "--prefix", "/fenceline/", "--keys-only")
                        .strip())
                .isEmpty();
    }

    @Test
    void migrateTwiceIsANoOp() throws Exception {
        SampleProcesses.Result r = s.cli("migrate");
        assertThat(r.exit()).isZero();
        assertThat(r.stdout()).contains("(0 settlement migration(s) applied now)");
        assertNothingChanged();
    }

    @Test
    void unknownElectionIsRefusedByEveryCommand() throws Exception {
        for (List<String> cmd : List.of(
                List.of("seed", "--payments", "5"),
                List.of("status"),
                List.of("pause"),
                List.of("resume"),
                List.of("resign"),
                List.of("verify"),
                List.of("audit", "rejected"),
                List.of("worker", "--id", "x"))) {
            List<String> args = new java.util.ArrayList<>(cmd);
            args.addAll(List.of("--jdbc-url", s.jdbcUrl, "--etcd", s.etcd.endpointsCsv(), "--election", "nope"));
            SampleProcesses.Result r = s.cliRaw(args);
            assertThat(r.exit()).as(cmd + ": " + r.stderr()).isEqualTo(2);
            assertThat(r.stderr())
                    .as(cmd.toString())
                    .contains("unknown election 'nope'")
                    .contains("registered: settlement")
                    .contains("Nothing was changed");
        }
        assertNothingChanged();
    }

    @Test
    void malformedJdbcUrlIsRefused() throws Exception {
        SampleProcesses.Result r =
                s.cliRaw(List.of("seed", "--payments", "5", "--jdbc-url", "jdbc:postgresql://127.0.0.1:99999/x"));
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.stderr()).contains("--jdbc-url port must be 1..65535 (got 99999)");
        r = s.cliRaw(List.of("status", "--jdbc-url", "postgresql://127.0.0.1/x"));
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.stderr()).contains("--jdbc-url must be a PostgreSQL JDBC URL");
        assertNothingChanged();
    }

    @Test
    void negativePaymentCountIsRefused() throws Exception {
        SampleProcesses.Result r = s.cli("seed", "--payments", "-3");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.stderr()).contains("--payments must be between 1 and 10000000 (got -3)");
        assertNothingChanged();
    }

    @Test
    void malformedEtcdEndpointIsRefused() throws Exception {
        SampleProcesses.Result r =
                s.cliRaw(List.of("pause", "--jdbc-url", s.jdbcUrl, "--etcd", "ftp://127.0.0.1:2379"));
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.stderr()).contains("--etcd endpoint must be host:port or start with http:// or https://");
        assertNothingChanged();
    }

    @Test
    void missingEtcdTlsOrPasswordFilesAreRefusedNamingOptionAndPath() throws Exception {
        String missing = "/nonexistent/fenceline/etcd-ca.pem";
        for (List<String> opts : List.of(
                List.of("--etcd", "https://127.0.0.1:2379", "--etcd-ca", missing),
                List.of("--etcd", s.etcd.endpointsCsv(), "--etcd-user", "app", "--etcd-password-file", missing))) {
            for (String cmd : List.of("pause", "resign", "worker")) {
                List<String> args = new java.util.ArrayList<>(List.of(cmd, "--jdbc-url", s.jdbcUrl));
                args.addAll(opts);
                SampleProcesses.Result r = s.cliRaw(args);
                assertThat(r.exit()).as(args + ": " + r.stderr()).isEqualTo(2);
                assertThat(r.stderr())
                        .as(args.toString())
                        .contains(opts.get(opts.size() - 2) + " names a file that does not "
                                + "exist or is not readable: '" + missing + "'")
                        .contains("Nothing was changed");
            }
        }
        assertNothingChanged();
    }

    @Test
    void anEndpointWithoutSchemeMeansHttp() throws Exception {
        String hostPorts = s.etcd.endpointsCsv().replace("http://", "");
        SampleProcesses.Result r = s.cliRaw(List.of("status", "--jdbc-url", s.jdbcUrl, "--etcd", hostPorts, "--json"));
        assertThat(r.exit()).as(r.stderr()).isZero();
        assertThat(r.stdout()).contains("\"etcd_ok\":true");
    }

    @Test
    void unreachableDatabaseIsAFailureWithAClearMessageNotAStackTrace() throws Exception {
        SampleProcesses.Result r =
                s.cliRaw(List.of("verify", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/none?user=postgres"));
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.stderr())
                .contains("fenceline verify: error: cannot connect to PostgreSQL at jdbc:postgresql://127.0.0.1:1/none")
                .doesNotContain("\tat ");
    }
}
