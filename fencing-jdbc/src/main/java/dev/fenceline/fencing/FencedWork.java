package dev.fenceline.fencing;

import org.jspecify.annotations.Nullable;

/**
 * The business writes of one fenced transaction. May run at most once per {@code transaction(...)} call. Its result
 * is what {@code transaction(...)} returns, null included.
 */
@FunctionalInterface
public interface FencedWork<T extends @Nullable Object> {
    T run(FencedContext ctx) throws Exception;
}
