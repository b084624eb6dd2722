/**
 * Spring Boot auto-configuration of Fenceline ({@link dev.fenceline.spring.FencelineAutoConfiguration}); the user's
 * documentation is {@code docs/spring-boot.md}. It adds no fencing logic of its own: who may run comes from
 * {@code dev.fenceline.election}, whether a write commits is decided by PostgreSQL through
 * {@code dev.fenceline.fencing}, and the run loop is {@code dev.fenceline.task}.
 *
 * <h2>One package, two Spring Boot generations</h2>
 * These sources are compiled twice: by {@code fenceline-spring-boot-starter} against Spring Boot 3.5 and by
 * {@code fenceline-spring-boot4-starter} against Spring Boot 4.0. They name only Boot API that is the same on both.
 * What moved in Boot 4 is behind three classes each artifact has its own copy of, in
 * {@code spring-boot-starter/src/boot3/java} and {@code spring-boot4-starter/src/main/java}:
 * {@code SpringBootGeneration} (the supported line, the artifact's name, the auto-configurations to run after),
 * {@code FencelineHealthIndicator} and {@code FencelineHealthConfiguration} (Boot's health API), which hand over to
 * the shared {@link dev.fenceline.spring.FencelineHealthReport}. Compiling the shared sources against each Boot checks
 * them against both APIs on every build; a shared jar compiled once would meet Boot 4 only at run time.
 *
 * <h2>Invariants</h2>
 * <ol>
 *   <li>Properties are validated when bound, by the library's own builders, before anything connects; an invalid
 *       value fails the start naming the {@code fenceline.} property, the limit and the value
 *       ({@link dev.fenceline.spring.FencelinePropertiesValidator}, {@link dev.fenceline.spring.PropertyNames}). A
 *       {@code fenceline.*} property that is not Fenceline's fails it first, naming the closest valid ones
 *       ({@link dev.fenceline.spring.UnknownFencelineProperties}); so does a Spring Boot line the starter was not
 *       tested on, unless {@code fenceline.spring-boot-version-check=false}
 *       ({@link dev.fenceline.spring.SpringBootVersionCheck}).</li>
 *   <li>The fencing migrations run before the application's Flyway migrations and before every bean that depends on
 *       database initialization ({@link dev.fenceline.spring.FencingMigrationsDatabaseInitializerDetector}).</li>
 *   <li>No term is held before every singleton exists: the election and the tasks start as lifecycles.</li>
 *   <li>Stop order: tasks hand over (default phase), then the auto-configured election closes (a lower phase),
 *       then the session and the pools are destroyed. The session has no JVM hook of its own, so it cannot close
 *       under a task that still writes.</li>
 *   <li>One election handle per election name per session: with fenced tasks the starter creates no
 *       {@code LeaderElection} bean ({@link dev.fenceline.spring.NoFencedLeaderTaskCondition}).</li>
 *   <li>No meter is registered twice in the application's registry: the starter registers none; the election and the
 *       tasks register theirs; the tasks' shared admin client keeps its meters out of it.</li>
 * </ol>
 */
package dev.fenceline.spring;
