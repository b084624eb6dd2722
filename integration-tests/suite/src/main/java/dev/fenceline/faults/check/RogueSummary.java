package dev.fenceline.faults.check;

/**
 * The rogue writer's attempts against what the database kept: {@code attempts} tried, {@code refused} by the fence,
 * {@code audited} refused ones with exactly one audit row, {@code committed} rogue writes the database kept (attempts
 * told "committed" plus rogue rows found), {@code failed} (another error or outcome unknown: e.g. the server was down).
 */
public record RogueSummary(int attempts, int refused, int audited, int committed, int failed) {
    public static final RogueSummary NONE = new RogueSummary(0, 0, 0, 0, 0);
}
