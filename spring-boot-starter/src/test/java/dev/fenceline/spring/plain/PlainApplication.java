package dev.fenceline.spring.plain;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** An application without fenced tasks: it writes with the auto-configured LeaderElection and FencedWriter itself. */
@SpringBootApplication
public class PlainApplication {}
