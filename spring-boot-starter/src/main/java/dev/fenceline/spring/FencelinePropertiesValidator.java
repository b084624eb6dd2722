package dev.fenceline.spring;

import dev.fenceline.election.ElectionKeys;
import dev.fenceline.fencing.FencingToken;
import java.util.Map;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * Rejects bound {@link FencelineProperties} that the library would reject, before anything is connected or created:
 * the first invalid property fails the binding with the library's message, naming the {@code fenceline.} property,
 * its limit and its value.
 */
final class FencelinePropertiesValidator implements Validator {
    static final FencelinePropertiesValidator INSTANCE = new FencelinePropertiesValidator();

    private static final PropertyNames TOP_LEVEL =
            new PropertyNames("fenceline", Map.of("resource", "resource", "leaderId", "election.candidate-id"));

    private FencelinePropertiesValidator() {}

    @Override
    public boolean supports(Class<?> type) {
        return FencelineProperties.class.isAssignableFrom(type);
    }

    /** Builds every library configuration the properties feed, as the auto-configuration will; builds no pool. */
    @Override
    public void validate(Object target, Errors errors) {
        FencelineProperties p = (FencelineProperties) target;
        if (!p.isEnabled()) {
            return;
        }
        try {
            p.electionConfig(null);
            checkNames(p);
            p.fencedWriterConfig();
            p.leaderTaskConfig(null, null);
            if (p.getDatasource().getUrl() != null) {
                p.databaseConfig();
            }
        } catch (InvalidFencelinePropertyException e) {
            if (e.property().indexOf('.') < 0) {
                errors.reject("fenceline.invalid", e.getMessage());
            } else {
                errors.rejectValue(e.beanPath(), "fenceline.invalid", e.getMessage());
            }
        }
    }

    /** Checks the election name, candidate id and resource the way the election and the fencing token will. */
    private static void checkNames(FencelineProperties p) {
        ElectionProperties election = p.getElection();
        if (election.getName() != null) {
            ElectionProperties.PROPERTIES.rethrow(() -> ElectionKeys.requireValidName(election.getName(), "name"));
        }
        if (p.resourceOrElectionName() != null) {
            PropertyNames names = p.getResource() != null ? TOP_LEVEL : ElectionProperties.PROPERTIES;
            names.rethrow(() -> FencingToken.of(p.resourceOrElectionName(), 1, election.candidateId()));
        } else {
            ElectionProperties.PROPERTIES.rethrow(() -> FencingToken.of("probe", 1, election.candidateId()));
        }
    }
}
