package dev.fenceline.fencing;

import dev.fenceline.testkit.NativeGuard;
import dev.fenceline.testkit.TestDatabase;

/**
 * The trigger contract against the native (C) guard from {@code migrations/native}. Skipped where the library is not
 * installed, except where {@code FENCELINE_REQUIRE_NATIVE_GUARD=1} (the test script sets it after installing it).
 */
class TriggerModeNativeIT extends TriggerModeContract {
    @Override
    String useGuard(TestDatabase db) {
        NativeGuard.assumeLoads(db);
        Fixtures.sql(db, "SELECT fencing.use_native_guard()");
        return "native";
    }
}
