package dev.fenceline.sample.cli;

import dev.fenceline.election.ElectionAdmin;
import java.util.Optional;

@picocli.CommandLine.Command(
        name = "resign",
        mixinStandardHelpOptions = true,
        description =
                "Ask the current leader to hand over: its validity ends at once, a batch in flight is rejected by the fence (audited) and settled by the next leader.")
final class ResignCommand extends ElectionOpCommand {
    @Override
    String act(ElectionAdmin admin, String election) {
        Optional<Long> term = admin.requestResign(election);
        return term.map(t -> "resign: asked the leader of '" + election + "' (term " + t + ") to resign")
                .orElse("resign: election '" + election + "' has no leader; nothing to do");
    }
}
