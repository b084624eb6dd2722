package dev.fenceline.spring.work;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** An application whose fenced task is a {@link JobWork} bean rather than an annotated method. */
@SpringBootApplication
public class WorkApplication {}
