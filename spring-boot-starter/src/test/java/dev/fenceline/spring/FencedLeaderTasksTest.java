package dev.fenceline.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fenceline.fencing.FencedContext;
import dev.fenceline.task.RunContext;
import dev.fenceline.task.TaskWork;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;

/**
 * How fenced tasks are found (pure logic: no etcd, no PostgreSQL; the tasks themselves run in
 * {@link SampleApplicationIT}).
 */
class FencedLeaderTasksTest {

    static class AnnotatedMethod {
        @FencedLeaderTask(resource = "ledger")
        long settle(FencedContext ctx) {
            return 0;
        }
    }

    static class WrongSignature {
        @FencedLeaderTask
        void settle(FencedContext ctx) {}
    }

    @FencedLeaderTask(resource = "archive", election = "archive-election")
    static class ArchiveWork implements TaskWork<String> {
        @Override
        public String plan(RunContext run) {
            return null;
        }

        @Override
        public long run(FencedContext ctx, String plan) {
            return 0;
        }
    }

    @Test
    void anAnnotatedMethodAndATaskWorkBeanAreBothDeclaredTasks() {
        FencedLeaderTasks tasks = new FencedLeaderTasks();
        assertThat(tasks.declared()).isFalse();
        tasks.postProcessAfterInitialization(new Object(), "plain");
        assertThat(tasks.declared()).isFalse();
        tasks.postProcessAfterInitialization(new AnnotatedMethod(), "settlement");
        assertThat(tasks.declared()).isTrue();

        FencedLeaderTasks beans = new FencedLeaderTasks();
        beans.postProcessAfterInitialization(new ArchiveWork(), "archive");
        assertThat(beans.declared()).isTrue();
    }

    @Test
    void anAnnotatedMethodWithAnotherSignatureFailsNamingTheMethodAndTheExpectedSignature() {
        FencedLeaderTasks tasks = new FencedLeaderTasks();
        assertThatThrownBy(() -> tasks.postProcessAfterInitialization(new WrongSignature(), "wrong"))
                .isInstanceOf(BeanCreationException.class)
                .hasMessageContaining("wrong.settle")
                .hasMessageContaining("void dev.fenceline.spring.FencedLeaderTasksTest$WrongSignature.settle("
                        + "dev.fenceline.fencing.FencedContext)")
                .hasMessageContaining("must take one FencedContext and return long or int");
    }

    @Test
    void aMethodsReturnedUnitsAreTheRunsUnits() throws Exception {
        class Counting {
            @FencedLeaderTask
            int settle(FencedContext ctx) {
                return 7;
            }
        }
        TaskWork<Boolean> work = FencedLeaderTasks.methodWork(
                "counting.settle", new Counting(), Counting.class.getDeclaredMethod("settle", FencedContext.class));
        assertThat(work.run(null, work.plan(null))).isEqualTo(7);
    }

    /** Stands for the starter's LeaderElection bean, which carries the same condition. */
    record ElectionMarker() {}

    @Configuration(proxyBeanMethods = false)
    static class Marker {
        @Bean
        @Conditional(NoFencedLeaderTaskCondition.class)
        ElectionMarker electionMarker() {
            return new ElectionMarker();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class WithTaskWorkBean {
        @Bean
        ArchiveWork archiveWork() {
            return new ArchiveWork();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class WithAnnotatedMethod {
        @Bean
        AnnotatedMethod settlement() {
            return new AnnotatedMethod();
        }
    }

    @Test
    void theStarterCreatesNoElectionOfItsOwnWhenTheApplicationDeclaresFencedTasks() {
        ApplicationContextRunner runner = new ApplicationContextRunner();
        runner.withUserConfiguration(Marker.class)
                .run(context -> assertThat(context).hasSingleBean(ElectionMarker.class));
        runner.withUserConfiguration(WithTaskWorkBean.class, Marker.class)
                .run(context -> assertThat(context).doesNotHaveBean(ElectionMarker.class));
        runner.withUserConfiguration(WithAnnotatedMethod.class, Marker.class)
                .run(context -> assertThat(context).doesNotHaveBean(ElectionMarker.class));
    }
}
