package dev.fenceline.fencing;

import dev.fenceline.testkit.TestDatabase;

/** The every-writer contract against the PL/pgSQL guard (the one every server can run). */
class EveryWriterPlpgsqlIT extends EveryWriterContract {
    @Override
    String useGuard(TestDatabase db) {
        Fixtures.sql(db, "SELECT fencing.use_plpgsql_guard()");
        return "plpgsql";
    }
}
