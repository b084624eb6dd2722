package dev.fenceline.spring.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A Spring Boot application using the starter as an application would: its own Flyway migration protects a table,
 * {@link SettlementTask} settles requests only while leader, {@link FreezePoint} lets a test freeze the leader right
 * before a fenced transaction begins (as a GC pause or a stopped VM would).
 */
// spotless:off (the docs show this region as it is)
// tag::minimal-app[]
@SpringBootApplication
public class SampleApplication {
    public static void main(String[] args) {
        SpringApplication.run(SampleApplication.class, args);
    }
}
// end::minimal-app[]
// spotless:on
