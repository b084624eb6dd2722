package dev.fenceline.sample.cli;

/** Bad command-line input: reported with its message and exit code 2, before anything is changed. */
public final class BadInputException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public BadInputException(String message) {
        super(message);
    }
}
