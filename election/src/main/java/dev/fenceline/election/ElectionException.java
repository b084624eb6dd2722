package dev.fenceline.election;

/** Configuration errors, lifecycle misuse, and etcd failures surfaced to callers (unchecked). */
public class ElectionException extends RuntimeException {
  public ElectionException(String message) {
    super(message);
  }

  public ElectionException(String message, Throwable cause) {
    super(message, cause);
  }
}
