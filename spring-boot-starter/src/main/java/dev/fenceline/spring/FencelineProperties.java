package dev.fenceline.spring;

import dev.fenceline.db.DatabaseConfig;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.fencing.FencedWriterConfig;
import dev.fenceline.task.LeaderTaskConfig;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * The {@code fenceline.*} properties: the top-level ones here, each group in its own class
 * ({@link ElectionProperties}, {@link WriterProperties}, {@link DatasourceProperties}, {@link TaskProperties},
 * {@link MigrationsProperties}). Nothing is checked while binding: {@link #validate} (by
 * {@link FencelinePropertiesValidator}) builds the library's own {@link ElectionConfig}, {@link FencedWriterConfig}
 * and {@link DatabaseConfig} from them, so the limits are the library's, and each error is reported against the
 * {@code fenceline.} property it came from (with the value and, where Boot knows it, the line of the configuration
 * file). Defaults that the library computes (renew interval, safety margin, call timeout) stay unset here so that
 * the library computes them from the TTL.
 * <p>
 * {@code ignoreUnknownFields = false}: a {@code fenceline.*} property that matches nothing here (a misspelled
 * {@code fenceline.election.ttll}, in a nested group as much as at the top) fails the binding instead of leaving the
 * default silently in force. Spring's check covers the whole {@code fenceline} subtree; with the auto-configuration,
 * {@link UnknownFencelineProperties} runs the same check first, before {@link #validate}, and names the closest valid
 * properties.
 * <p>
 * Each group is a field marked {@link NestedConfigurationProperty}: that is what makes Spring's configuration
 * metadata processor describe a group declared in a class of its own, and what {@link UnknownFencelineProperties}
 * recognizes a group by.
 */
@ConfigurationProperties(prefix = "fenceline", ignoreUnknownFields = false)
public class FencelineProperties implements Validator {

    /** Whether to auto-configure Fenceline at all. */
    private boolean enabled = true;

    /**
     * Refuse to start on a Spring Boot version this starter was not built and tested against. false: start on any
     * version, at the application's own risk.
     */
    private boolean springBootVersionCheck = true;

    /**
     * The fenced resource that the election's term guards in PostgreSQL (the name the application's migrations pass
     * to {@code fencing.protect_table}). Defaults to {@code fenceline.election.name}.
     */
    private String resource;

    @NestedConfigurationProperty
    private final ElectionProperties election = new ElectionProperties();

    @NestedConfigurationProperty
    private final WriterProperties writer = new WriterProperties();

    @NestedConfigurationProperty
    private final DatasourceProperties datasource = new DatasourceProperties();

    @NestedConfigurationProperty
    private final MigrationsProperties migrations = new MigrationsProperties();

    @NestedConfigurationProperty
    private final TaskProperties task = new TaskProperties();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public boolean isSpringBootVersionCheck() {
        return springBootVersionCheck;
    }

    /**
     * Declared here so that it is a known {@code fenceline.*} property and documented in the metadata; the check
     * itself ({@link SpringBootVersionCheck}) reads it from the Environment, before anything is bound.
     */
    public void setSpringBootVersionCheck(boolean springBootVersionCheck) {
        this.springBootVersionCheck = springBootVersionCheck;
    }

    public String getResource() {
        return resource;
    }

    public void setResource(String resource) {
        this.resource = resource;
    }

    public ElectionProperties getElection() {
        return election;
    }

    public WriterProperties getWriter() {
        return writer;
    }

    public DatasourceProperties getDatasource() {
        return datasource;
    }

    public MigrationsProperties getMigrations() {
        return migrations;
    }

    public TaskProperties getTask() {
        return task;
    }

    /** The resource the fencing token names: {@code fenceline.resource}, else the election name. */
    public String resourceOrElectionName() {
        return resource != null ? resource : election.getName();
    }

    /** The session's configuration, built and checked by {@link ElectionConfig.Builder#build()}. */
    public ElectionConfig electionConfig(MeterRegistry meterRegistry) {
        return election.electionConfig(meterRegistry);
    }

    /** The writer's configuration, built and checked by {@link FencedWriterConfig.Builder#build()}. */
    public FencedWriterConfig fencedWriterConfig() {
        return writer.fencedWriterConfig();
    }

    /** Fenceline's own pool, when {@code fenceline.datasource.url} is set; built and checked by {@link DatabaseConfig}. */
    public DatabaseConfig databaseConfig() {
        return datasource.databaseConfig();
    }

    /**
     * A fenced task's configuration, built and checked by {@link LeaderTaskConfig.Builder}.
     *
     * @param electionName the task's election, or null for its resource's name
     */
    public LeaderTaskConfig leaderTaskConfig(String electionName, MeterRegistry meterRegistry) {
        return task.leaderTaskConfig(electionName, election.candidateId(), meterRegistry);
    }

    @Override
    public boolean supports(Class<?> type) {
        return FencelinePropertiesValidator.INSTANCE.supports(type);
    }

    /**
     * Binding-time validation ({@link FencelinePropertiesValidator}): Spring validates a properties bean with the
     * bean itself when it is a {@link Validator}, so the check is reached from here.
     */
    @Override
    public void validate(Object target, Errors errors) {
        FencelinePropertiesValidator.INSTANCE.validate(target, errors);
    }
}
