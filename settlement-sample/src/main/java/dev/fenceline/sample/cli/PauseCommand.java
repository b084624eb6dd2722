package dev.fenceline.sample.cli;

import dev.fenceline.election.ElectionAdmin;

@picocli.CommandLine.Command(
        name = "pause",
        mixinStandardHelpOptions = true,
        description = "Set the kill switch: the leader resigns and no worker campaigns until 'resume'.")
final class PauseCommand extends ElectionOpCommand {
    @Override
    String act(ElectionAdmin admin, String election) {
        admin.pause(election);
        return "pause: kill switch set for '" + election
                + "': the leader resigns, no worker settles until 'fenceline resume'";
    }
}
