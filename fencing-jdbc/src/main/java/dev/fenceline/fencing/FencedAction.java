package dev.fenceline.fencing;

/**
 * The business writes of one fenced transaction that returns nothing ({@link FencedWriter#run}); the {@code void}
 * counterpart of {@link FencedWork}. May run at most once per {@code run(...)} call.
 */
@FunctionalInterface
public interface FencedAction {
    void run(FencedContext ctx) throws Exception;
}
