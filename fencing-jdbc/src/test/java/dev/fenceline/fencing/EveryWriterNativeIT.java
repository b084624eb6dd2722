package dev.fenceline.fencing;

import dev.fenceline.testkit.NativeGuard;
import dev.fenceline.testkit.TestDatabase;

/**
 * The every-writer contract against the native (C) guard from {@code migrations/native}. Skipped where the library
 * is not installed, except where {@code FENCELINE_REQUIRE_NATIVE_GUARD=1}.
 */
class EveryWriterNativeIT extends EveryWriterContract {
    @Override
    String useGuard(TestDatabase db) {
        NativeGuard.assumeLoads(db);
        Fixtures.sql(db, "SELECT fencing.use_native_guard()");
        return "native";
    }
}
