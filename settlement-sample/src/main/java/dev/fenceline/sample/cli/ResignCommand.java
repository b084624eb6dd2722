package dev.fenceline.sample.cli;

import dev.fenceline.election.ElectionAdmin;
import java.util.Optional;

@picocli.CommandLine.Command(name = "resign", mixinStandardHelpOptions = true,
        description = "Ask the current leader to hand over gracefully (it finishes its batch and resigns; another worker takes over).")
final class ResignCommand extends ElectionOpCommand {
    @Override
    String act(ElectionAdmin admin, String election) {
        Optional<Long> term = admin.requestResign(election);
        return term.map(t -> "resign: asked the leader of '" + election + "' (term " + t + ") to resign")
                .orElse("resign: election '" + election + "' has no leader; nothing to do");
    }
}
