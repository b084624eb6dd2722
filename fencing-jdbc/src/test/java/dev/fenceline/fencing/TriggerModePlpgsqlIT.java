package dev.fenceline.fencing;

import dev.fenceline.testkit.TestDatabase;

/** The trigger contract against the PL/pgSQL guard (the one every server can run). */
class TriggerModePlpgsqlIT extends TriggerModeContract {
    @Override
    String useGuard(TestDatabase db) {
        Fixtures.sql(db, "SELECT fencing.use_plpgsql_guard()");
        return "plpgsql";
    }
}
