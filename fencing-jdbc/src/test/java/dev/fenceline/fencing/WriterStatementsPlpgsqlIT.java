package dev.fenceline.fencing;

import dev.fenceline.testkit.TestDatabase;

/** The writer's statements in PL/pgSQL (the ones every server can run). */
class WriterStatementsPlpgsqlIT extends WriterStatementsContract {
    @Override
    String useGuard(TestDatabase db) {
        Fixtures.sql(db, "SELECT fencing.use_plpgsql_guard()");
        return "plpgsql";
    }
}
