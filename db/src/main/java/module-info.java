/**
 * Pools and jOOQ contexts for fenced connections, and the jOOQ classes of schema {@code fencing}. Every package is
 * API. pgjdbc has no module descriptor but a stable {@code Automatic-Module-Name} ({@code org.postgresql.jdbc}), so
 * requiring it is sound; it is required so that the driver is in the module graph where HikariCP looks it up.
 */
module dev.fenceline.db {
    requires transitive java.sql;
    requires transitive org.jooq;
    requires transitive com.zaxxer.hikari;
    requires org.postgresql.jdbc;
    // The nullness annotations: needed to compile against the API, not to run it.
    requires static transitive org.jspecify;

    exports dev.fenceline.db;
    exports dev.fenceline.db.generated;
    exports dev.fenceline.db.generated.routines;
    exports dev.fenceline.db.generated.tables;
    exports dev.fenceline.db.generated.tables.records;
}
