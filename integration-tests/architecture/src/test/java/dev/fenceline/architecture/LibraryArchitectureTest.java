package dev.fenceline.architecture;

import static com.tngtech.archunit.core.domain.AccessTarget.Predicates.declaredIn;
import static com.tngtech.archunit.core.domain.JavaAccess.Predicates.target;
import static com.tngtech.archunit.core.domain.properties.HasName.Predicates.name;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.CompositeArchRule;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The layering the README promises ("Dependencies point one way"), checked on the compiled production classes of
 * the library modules and the Spring Boot starter. Every rule fails on an empty set of classes (ArchUnit's default),
 * so a package that stops being imported fails here instead of passing unchecked.
 */
@AnalyzeClasses(
        packages = {
            "dev.fenceline.election",
            "dev.fenceline.fencing",
            "dev.fenceline.db",
            "dev.fenceline.migrations",
            "dev.fenceline.task",
            "dev.fenceline.spring"
        },
        importOptions = ImportOption.DoNotIncludeTests.class)
class LibraryArchitectureTest {
    private static final String ELECTION = "dev.fenceline.election..";
    private static final String ELECTION_INTERNAL = "dev.fenceline.election.internal..";
    private static final String FENCING = "dev.fenceline.fencing..";
    private static final String DB = "dev.fenceline.db..";
    private static final String MIGRATIONS = "dev.fenceline.migrations..";
    private static final String TASK = "dev.fenceline.task..";
    private static final String[] LIBRARY = {ELECTION, FENCING, DB, MIGRATIONS, TASK};

    /**
     * The classes that may read {@code System.nanoTime()} in election and leader-task, and why. The first two are the
     * clock seams; the other two read it for retry and liveness timing that decides no validity.
     */
    static final Map<String, String> NANO_TIME_READERS = Map.of(
            "dev.fenceline.election.internal.SuspendAwareClock",
            "the election's clock seam (ElectionClock.system()): every validity deadline is measured on it",
            "dev.fenceline.task.LeaderTask$Builder",
            "leader-task's clock seam: the default of the nanoClock LongSupplier that LeaderTask is given",
            "dev.fenceline.election.internal.PrefixWatch",
            "watch liveness: how long the watch has been silent, which only decides when to re-create it",
            "dev.fenceline.election.internal.DefaultElectionAdmin",
            "connect(): the deadline for retrying an admin connection, which holds no lease");

    /** The library classes that may put a thread to sleep, and why. */
    static final Map<String, String> SLEEPERS = Map.of(
            "dev.fenceline.election.internal.LeaseKeeper",
            "grantInitial(): backs off between attempts to grant the first lease, on the caller's thread in open()",
            "dev.fenceline.election.internal.DefaultElectionAdmin",
            "connect(): backs off between connection attempts, on the caller's thread, within connectTimeout");

    @ArchTest
    static final ArchRule electionAndFencingNeverDependOnEachOther = CompositeArchRule.of(noClasses()
                    .that()
                    .resideInAPackage(ELECTION)
                    .should()
                    .dependOnClassesThat()
                    .resideInAPackage(FENCING))
            .and(noClasses()
                    .that()
                    .resideInAPackage(FENCING)
                    .should()
                    .dependOnClassesThat()
                    .resideInAPackage(ELECTION))
            .because("leader-task is the one place where a leadership's term becomes the writer's fencing token, "
                    + "so either side can be used, tested and reasoned about without the other");

    // Names are the modules', so a failure reads like the README's module table.
    @ArchTest
    static final ArchRule libraryModulesDependOnlyOnTheModulesBelowThem = layeredArchitecture()
            .consideringOnlyDependenciesInLayers()
            .layer("leader-task")
            .definedBy(TASK)
            .layer("election")
            .definedBy(ELECTION)
            .layer("fencing-jdbc")
            .definedBy(FENCING)
            .layer("db")
            .definedBy(DB)
            .layer("migrations")
            .definedBy(MIGRATIONS)
            .whereLayer("leader-task")
            .mayOnlyAccessLayers("election", "fencing-jdbc")
            .whereLayer("election")
            .mayNotAccessAnyLayer()
            .whereLayer("fencing-jdbc")
            .mayOnlyAccessLayers("db", "migrations")
            .whereLayer("db")
            .mayOnlyAccessLayers("migrations")
            .whereLayer("migrations")
            .mayNotAccessAnyLayer()
            .because("dependencies point one way: fencing-jdbc -> db -> migrations, and leader-task on election "
                    + "and fencing-jdbc; a module further down must stay usable without the ones above it");

    @ArchTest
    static final ArchRule libraryNeverDependsOnTheSampleTheStarterOrTheTestKits = noClasses()
            .that()
            .resideInAnyPackage(LIBRARY)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(
                    "dev.fenceline.sample..",
                    "dev.fenceline.spring..",
                    "dev.fenceline.testkit..",
                    "dev.fenceline.faults..")
            .because("the sample and the starter are built on the library, and the test kits are test code: "
                    + "the published jars must not need any of them");

    // Checked over the other library modules and the starter (none uses the internals today); the sample is not on
    // this class path, see the pom.
    @ArchTest
    static final ArchRule nothingOutsideTheElectionUsesItsInternals = noClasses()
            .that()
            .resideOutsideOfPackage(ELECTION)
            .should()
            .dependOnClassesThat()
            .resideInAPackage(ELECTION_INTERNAL)
            .because("dev.fenceline.election.internal is reachable (no module descriptor) but is not API "
                    + "and changes without notice");

    // accessTargetWhere, not callMethod: a method reference (System::nanoTime) is an access too, and it is how the
    // clock seams read the clock.
    @ArchTest
    static final ArchRule onlyTheClockSeamsReadSystemNanoTimeInElectionAndLeaderTask = noClasses()
            .that()
            .resideInAnyPackage(ELECTION, TASK)
            .and(areNotListedIn(NANO_TIME_READERS))
            .should()
            .accessTargetWhere(target(declaredIn(System.class).and(name("nanoTime"))))
            .because("decisions take their time from an injected clock, so they can be tested with a fake one "
                    + "and the election's deadlines count host suspend");

    @ArchTest
    static final ArchRule libraryThreadsSleepOnlyWhereListed = noClasses()
            .that()
            .resideInAnyPackage(LIBRARY)
            .and(areNotListedIn(SLEEPERS))
            .should()
            .accessTargetWhere(target(
                    declaredIn(Thread.class).or(declaredIn(TimeUnit.class)).and(name("sleep"))))
            .because("a sleeping library thread does not see its leadership end or its pool close; waits belong "
                    + "on a scheduler, a future or a condition that can be woken");

    @ArchTest
    static final ArchRule libraryHasNoManagerOrUtilClasses = noClasses()
            .that()
            .resideInAnyPackage(LIBRARY)
            .should()
            .haveSimpleNameEndingWith("Manager")
            .orShould()
            .haveSimpleNameEndingWith("Util")
            .orShould()
            .haveSimpleNameEndingWith("Utils")
            .because("a class's name should say what it does; Manager and Util say only that it does something");

    /** An allowance whose class was renamed or removed must go, not wait to cover some later class of that name. */
    @ArchTest
    static void everyAllowedClassStillExists(JavaClasses classes) {
        List<String> missing = new ArrayList<>();
        for (Map<String, String> allowed : List.of(NANO_TIME_READERS, SLEEPERS)) {
            allowed.keySet().stream().filter(n -> !classes.contain(n)).forEach(missing::add);
        }
        if (!missing.isEmpty()) {
            throw new AssertionError("allowed classes that no longer exist (remove them from the list): " + missing);
        }
    }

    private static DescribedPredicate<JavaClass> areNotListedIn(Map<String, String> allowed) {
        return DescribedPredicate.describe(
                "are not one of " + allowed.keySet(), c -> !allowed.containsKey(c.getName()));
    }
}
