package dev.fenceline.spring;

/** {@code fenceline.migrations.*}: the fencing schema. */
public class MigrationsProperties {
    /**
     * Apply the fencing migrations (schema fencing, history table fencing.fencing_schema_history) at start,
     * before the application's own Flyway migrations.
     */
    private boolean enabled = true;

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }
}
