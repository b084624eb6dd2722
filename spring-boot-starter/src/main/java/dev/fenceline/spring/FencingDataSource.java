package dev.fenceline.spring;

import com.zaxxer.hikari.HikariDataSource;
import javax.sql.DataSource;

/**
 * The DataSource the fenced writer and the fencing migrations use: Fenceline's own pool when
 * {@code fenceline.datasource.url} is set (closed with the context), else the application's DataSource (left alone).
 * Deliberately not a {@link DataSource} bean itself, so that Boot's DataSource auto-configuration still creates the
 * application's.
 */
public final class FencingDataSource implements AutoCloseable {
    private final DataSource dataSource;
    private final boolean owned;

    private FencingDataSource(DataSource dataSource, boolean owned) {
        this.dataSource = dataSource;
        this.owned = owned;
    }

    /** Fenceline's own pool, closed by {@link #close()}. */
    public static FencingDataSource owned(HikariDataSource pool) {
        return new FencingDataSource(pool, true);
    }

    /** The application's DataSource; {@link #close()} leaves it open. */
    public static FencingDataSource shared(DataSource applicationDataSource) {
        return new FencingDataSource(applicationDataSource, false);
    }

    public DataSource dataSource() {
        return dataSource;
    }

    /** True when this is Fenceline's own pool (fenceline.datasource.url). */
    public boolean owned() {
        return owned;
    }

    @Override
    public void close() {
        if (owned && dataSource instanceof HikariDataSource pool) {
            pool.close();
        }
    }
}
