package dev.fenceline.sample.cli;

import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.sample.db.SampleDatabase;
import java.util.concurrent.Callable;
import picocli.CommandLine.Mixin;

/** Shared body of resign / pause / resume: validate, check the election is known, then act on etcd. */
abstract class ElectionOpCommand implements Callable<Integer> {
    @Mixin
    CommonOptions common;

    abstract String act(ElectionAdmin admin, String election);

    @Override
    public Integer call() throws Exception {
        common.validateAll();
        try (SampleDatabase db = common.openDatabase("fenceline-admin", 1)) {
            Preconditions.requireKnownElection(db, common.election());
        }
        try (ElectionAdmin admin = EtcdOps.admin(common)) {
            System.out.println(act(admin, common.election()));
        }
        return FencelineCli.EXIT_OK;
    }
}
