package dev.fenceline.spring;

import java.util.List;

/**
 * {@code fenceline.*} properties that are not Fenceline properties, most likely misspelled. The message names each
 * one, its value and where it was set, and the closest valid properties (or, when none is close, the valid properties
 * of its group), e.g. {@code fenceline.election.ttll is not a Fenceline property (value '3s', origin class path
 * resource [application.properties] - 3:25); did you mean fenceline.election.ttl?}.
 */
public class UnknownFencelinePropertyException extends InvalidFencelinePropertyException {
    private static final long serialVersionUID = 1L;

    private final List<String> unknownProperties;

    public UnknownFencelinePropertyException(List<String> unknownProperties, String message) {
        super(unknownProperties.get(0), message, null);
        this.unknownProperties = List.copyOf(unknownProperties);
    }

    /** Every unknown property, e.g. {@code fenceline.election.ttll}; {@link #property()} is the first of them. */
    public List<String> unknownProperties() {
        return unknownProperties;
    }
}
