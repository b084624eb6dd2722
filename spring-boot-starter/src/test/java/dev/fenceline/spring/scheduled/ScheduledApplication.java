package dev.fenceline.spring.scheduled;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** An application whose fenced task runs on a schedule its annotation sets. */
@SpringBootApplication
public class ScheduledApplication {}
