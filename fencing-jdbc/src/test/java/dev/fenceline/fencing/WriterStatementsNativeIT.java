package dev.fenceline.fencing;

import dev.fenceline.testkit.NativeGuard;
import dev.fenceline.testkit.TestDatabase;

/**
 * The writer's statements in C, from {@code migrations/native}. Skipped where the library is not installed, except
 * where {@code FENCELINE_REQUIRE_NATIVE_GUARD=1}.
 */
class WriterStatementsNativeIT extends WriterStatementsContract {
    @Override
    String useGuard(TestDatabase db) {
        NativeGuard.assumeLoads(db);
        Fixtures.sql(db, "SELECT fencing.use_native_guard()");
        return "native";
    }
}
