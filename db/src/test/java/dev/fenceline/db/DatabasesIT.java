package dev.fenceline.db;

import static dev.fenceline.db.generated.Tables.HIGH_WATER_MARK;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.fenceline.migrations.FencingMigrations;
import dev.fenceline.testkit.TestDatabase;
import dev.fenceline.testkit.junit.PostgresExtension;
import java.time.Duration;
import org.jooq.DSLContext;
import org.jooq.Record3;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(PostgresExtension.class)
class DatabasesIT {

    @Test
    void pooledConnectionsCarryTheFencedSessionSettingsAndGeneratedClassesMatchTheSchema(TestDatabase db) {
        FencingMigrations.migrate(db.dataSource());
        DatabaseConfig config = DatabaseConfig.builder(db.jdbcUrl())
                .username(db.user())
                .maximumPoolSize(2)
                .lockTimeout(Duration.ofMillis(1500))
                .idleInTransactionSessionTimeout(Duration.ofSeconds(7))
                .applicationName("dbs-it")
                .build();
        try (HikariDataSource ds = Databases.dataSource(config)) {
            DSLContext dsl = Databases.dsl(ds);
            Record3<String, String, String> r = dsl.select(
                            DSL.field("current_setting('lock_timeout')", String.class),
                            DSL.field("current_setting('idle_in_transaction_session_timeout')", String.class),
                            DSL.field("current_setting('application_name')", String.class))
                    .fetchSingle();
            assertThat(r.value1()).isEqualTo("1500ms");
            assertThat(r.value2()).isEqualTo("7s");
            assertThat(r.value3()).isEqualTo("dbs-it");

            dsl.select(DSL.field("fencing.register_resource('orders')")).fetch();
            assertThat(dsl.fetchValue(HIGH_WATER_MARK.HIGHEST_ACCEPTED, HIGH_WATER_MARK.RESOURCE.eq("orders")))
                    .isZero();
        }
    }
}
