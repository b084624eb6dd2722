package dev.fenceline.testkit;

/** A prerequisite for real infrastructure is missing or broken; the message says how to fix it. */
public class InfrastructureException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public InfrastructureException(String message) {
        super(message);
    }

    public InfrastructureException(String message, Throwable cause) {
        super(message, cause);
    }
}
