package dev.fenceline.fencing;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.db.Databases;
import dev.fenceline.testkit.PgBouncer;
import dev.fenceline.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the attack tests by logins without superuser or ownership set up once per class: the fencing schema with a
 * short advance_timeout (1 s: an advance that cannot finish fails with FL005 soon, and the tests read that failure),
 * an application role ({@link AdversaryRole}), a login in no fencing role (only CONNECT, as PUBLIC has it), and threads
 * for the attackers' background work. Each table it hands out is a fresh resource at mark 5, held by leader a.
 */
final class OutsiderScene implements AutoCloseable {
    private static final AtomicInteger NUMBERS = new AtomicInteger();

    final TestDatabase db;
    final AdversaryRole adversary;
    final ExecutorService background = Executors.newCachedThreadPool();
    private final String outsider;

    private OutsiderScene(TestDatabase db, AdversaryRole adversary, String outsider) {
        this.db = db;
        this.adversary = adversary;
        this.outsider = outsider;
    }

    /** @param outsiderPrefix the outsider login's name before this JVM's pid (one per test class) */
    static OutsiderScene create(TestDatabase db, String outsiderPrefix) {
        Fixtures.migrate(db);
        Fixtures.sql(db, "UPDATE fencing.settings SET value = '1s' WHERE name = 'advance_timeout'");
        String outsider = outsiderPrefix + ProcessHandle.current().pid();
        AdversaryRole adversary = AdversaryRole.create(db);
        Fixtures.sql(db, "CREATE ROLE " + outsider + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE");
        return new OutsiderScene(db, adversary, outsider);
    }

    /** A number no other table, resource or pool of these tests has. */
    int nextNumber() {
        return NUMBERS.incrementAndGet();
    }

    /** A fresh resource at mark 5 (held by leader a) and its protected table; returns the table's name. */
    String table(String prefix) {
        String table = prefix + "_" + nextNumber();
        adversary.protectedTable(table, resourceOf(table), 5, "a");
        return table;
    }

    static String resourceOf(String table) {
        return table.replace('_', '-');
    }

    String lockKey(String resource) {
        return Fixtures.text(db, "SELECT lock_key FROM fencing.high_water_mark WHERE resource = '" + resource + "'");
    }

    /** A login that belongs to no fencing role and may not touch the table: only CONNECT, as PUBLIC has it. */
    Connection connectAsOutsider() throws SQLException {
        return DriverManager.getConnection(db.jdbcUrl(), outsider, "");
    }

    /** A pool of one login as the adversary role, straight to PostgreSQL. */
    HikariDataSource directPool(String name) {
        return pool(db.jdbcUrl(), name);
    }

    /** A pool of one login as the adversary role through {@code bouncer}. */
    HikariDataSource bouncerPool(PgBouncer bouncer, String name) {
        return pool(bouncer.jdbcUrl(db.name()), name);
    }

    private HikariDataSource pool(String jdbcUrl, String name) {
        return Databases.dataSource(DatabaseConfig.builder(jdbcUrl)
                .username(adversary.name())
                .maximumPoolSize(1)
                .applicationName(name)
                .poolName(name + "-" + nextNumber())
                .lockTimeout(Duration.ofSeconds(2))
                .idleInTransactionSessionTimeout(Duration.ofSeconds(30))
                .build());
    }

    @Override
    public void close() throws InterruptedException {
        background.shutdownNow();
        background.awaitTermination(AdversaryRole.QUERY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        Fixtures.sql(
                db,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + outsider + "'",
                "DROP ROLE IF EXISTS " + outsider);
        adversary.close();
    }
}
