package dev.fenceline.sample.cli;

import dev.fenceline.election.ElectionAdmin;

@picocli.CommandLine.Command(
        name = "resume",
        mixinStandardHelpOptions = true,
        description = "Clear the kill switch: workers campaign again.")
final class ResumeCommand extends ElectionOpCommand {
    @Override
    String act(ElectionAdmin admin, String election) {
        admin.resume(election);
        return "resume: kill switch cleared for '" + election + "': workers campaign again";
    }
}
