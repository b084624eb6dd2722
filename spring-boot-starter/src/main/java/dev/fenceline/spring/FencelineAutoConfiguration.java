package dev.fenceline.spring;

import dev.fenceline.db.Databases;
import dev.fenceline.election.ElectionConfig;
import dev.fenceline.election.ElectionSession;
import dev.fenceline.election.LeaderElection;
import dev.fenceline.fencing.FencedWriter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.ConfigurationPropertiesBindHandlerAdvisor;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Import;

/**
 * Fenceline for a Spring Boot application. Beans (each backs off when the application defines its own):
 * <ul>
 *   <li>{@link ElectionConfig} from {@code fenceline.election.*}, its meters in the application's
 *       {@link MeterRegistry} (Boot's, when Actuator is present; the library's global registry otherwise). The
 *       election registers its own meters ({@code fenceline.election.*}); this configuration adds none.</li>
 *   <li>{@link ElectionSession}: one etcd client and lease, closed with the context.</li>
 *   <li>{@link LeaderElection} for {@code fenceline.election.name}, started with the context by
 *       {@link LeaderElectionLifecycle}, closed (resigned) when it stops; not when the application declares fenced
 *       tasks, which hold their own elections.</li>
 *   <li>{@link FencedLeaderTasks}: every {@code TaskWork} bean and {@link FencedLeaderTask} method as a
 *       {@code LeaderTask}, started with the context, handed over when it closes; its meters
 *       ({@code fenceline.task.*}) in the application's registry.</li>
 *   <li>{@link FencingDataSource} and {@link FencedWriter} on it; {@link FencingMigrationsInitializer}, which the
 *       application's Flyway waits for.</li>
 *   <li>{@code fencelineHealthIndicator}: the {@code fenceline} health component
 *       ({@link FencelineHealthConfiguration}).</li>
 * </ul>
 * Start-up fails on a Spring Boot version the starter was not tested on ({@link SpringBootVersionCheck}) and on
 * {@code fenceline.*} properties that are not Fenceline's ({@link UnknownFencelineProperties}).
 * <p>
 * Invariant: the election only starts once every singleton exists, so no term is held before the fencing schema is
 * in place; and it is closed only after lifecycles of the default phase (work under the term) have stopped.
 * <p>
 * Shared by the Boot 3 and the Boot 4 artifact: what moved between the two generations (the auto-configurations it
 * runs after, the health API) is named only through {@link SpringBootGeneration} and
 * {@link FencelineHealthConfiguration}, of which each artifact has its own.
 */
@AutoConfiguration(
        afterName = {
            SpringBootGeneration.DATA_SOURCE_AUTO_CONFIGURATION,
            SpringBootGeneration.COMPOSITE_METER_REGISTRY_AUTO_CONFIGURATION,
            SpringBootGeneration.SIMPLE_METRICS_EXPORT_AUTO_CONFIGURATION
        })
@ConditionalOnProperty(prefix = "fenceline", name = "enabled", havingValue = "true", matchIfMissing = true)
@Conditional(SpringBootVersionCheck.class)
@EnableConfigurationProperties(FencelineProperties.class)
@Import({DatabaseInitializationDependencyConfigurer.class, FencelineHealthConfiguration.class})
public class FencelineAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    public ElectionConfig fencelineElectionConfig(
            FencelineProperties properties, ObjectProvider<MeterRegistry> meterRegistry) {
        return properties.electionConfig(meterRegistry.getIfUnique());
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public ElectionSession fencelineElectionSession(ElectionConfig config) {
        return ElectionSession.open(config);
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "fenceline.election", name = "name")
    @Conditional(NoFencedLeaderTaskCondition.class)
    public LeaderElection fencelineLeaderElection(ElectionSession session, FencelineProperties properties) {
        String host = properties.getElection().candidateId();
        return session.election(
                properties.getElection().getName(),
                host,
                Map.of("pid", Long.toString(ProcessHandle.current().pid())));
    }

    @Bean
    @ConditionalOnBean(name = "fencelineLeaderElection")
    public LeaderElectionLifecycle fencelineLeaderElectionLifecycle(LeaderElection fencelineLeaderElection) {
        return new LeaderElectionLifecycle(fencelineLeaderElection);
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public FencingDataSource fencingDataSource(
            FencelineProperties properties, ObjectProvider<DataSource> applicationDataSource) {
        if (properties.getDatasource().getUrl() != null) {
            return FencingDataSource.owned(Databases.dataSource(properties.databaseConfig()));
        }
        DataSource shared = applicationDataSource.getIfUnique();
        if (shared == null) {
            throw new InvalidFencelinePropertyException(
                    "fenceline.datasource.url",
                    "fenceline.datasource.url must be set when the application has no single DataSource "
                            + "(spring.datasource.url), but neither is set",
                    null);
        }
        return FencingDataSource.shared(shared);
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(
            prefix = "fenceline.migrations",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    public FencingMigrationsInitializer fencingMigrationsInitializer(FencingDataSource dataSource) {
        return new FencingMigrationsInitializer(dataSource);
    }

    /**
     * Rejects unknown {@code fenceline.*} properties before the known ones are validated. Static: the binder looks
     * advisors up when it binds the first {@code @ConfigurationProperties} bean, which may be before this
     * configuration exists.
     */
    @Bean
    static ConfigurationPropertiesBindHandlerAdvisor fencelineUnknownProperties() {
        return new UnknownFencelineProperties();
    }

    /** Static: a bean post-processor, created before (and without) the other beans of this configuration. */
    @Bean
    @ConditionalOnMissingBean
    public static FencedLeaderTasks fencedLeaderTasks() {
        return new FencedLeaderTasks();
    }

    @Bean
    @ConditionalOnMissingBean
    @DependsOnDatabaseInitialization
    public FencedWriter fencedWriter(FencingDataSource dataSource, FencelineProperties properties) {
        return FencedWriter.create(dataSource.dataSource(), properties.fencedWriterConfig());
    }
}
