package dev.fenceline.fencing;

/** The business writes of one fenced transaction. May run at most once per {@code transaction(...)} call. */
@FunctionalInterface
public interface FencedWork<T> {
    T run(FencedContext ctx) throws Exception;
}
