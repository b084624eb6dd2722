/**
 * The fenced writer. Only {@code dev.fenceline.fencing} is exported, and within it the writer's machinery
 * ({@code WriterEngine}, {@code FencedContextImpl}, {@code CurrentConnectionProvider}) is package-private: the API is
 * {@link dev.fenceline.fencing.FencedWriter} and the types its methods name.
 */
module dev.fenceline.fencing {
    requires transitive java.sql;
    requires transitive org.jooq;
    requires transitive dev.fenceline.db;
    requires com.fasterxml.jackson.core;
    requires org.postgresql.jdbc;
    requires org.slf4j;
    // The nullness annotations: needed to compile against the API, not to run it.
    requires static transitive org.jspecify;

    exports dev.fenceline.fencing;
}
