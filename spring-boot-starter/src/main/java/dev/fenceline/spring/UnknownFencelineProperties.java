package dev.fenceline.spring;

import java.beans.PropertyDescriptor;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.context.properties.ConfigurationPropertiesBindHandlerAdvisor;
import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.boot.context.properties.bind.AbstractBindHandler;
import org.springframework.boot.context.properties.bind.BindContext;
import org.springframework.boot.context.properties.bind.BindHandler;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.UnboundConfigurationPropertiesException;
import org.springframework.boot.context.properties.bind.handler.NoUnboundElementsBindHandler;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.UnboundElementsSourceFilter;
import org.springframework.util.ReflectionUtils;

/**
 * Fails the binding of {@link FencelineProperties} on a {@code fenceline.*} property that is not one of them, with an
 * {@link UnknownFencelinePropertyException} that names it and the closest valid ones.
 * <p>
 * {@code ignoreUnknownFields = false} on {@link FencelineProperties} already rejects such a property, but only after
 * {@link FencelineProperties#validate} ran, and a misspelling often trips that first: {@code fenceline.election.endpoint}
 * leaves the endpoints empty, and the start fails saying they are missing instead of naming the misspelled property.
 * This handler wraps all of the others, so its check runs first. What counts as bound is decided by Spring's own
 * {@link NoUnboundElementsBindHandler} (relaxed names, list elements), fed every binding event; like Spring's, it
 * leaves environment variables and JVM system properties out: their names cannot be read back reliably, and the
 * {@code fenceline.} system-property namespace is shared with other tools (the test kit's {@code fenceline.pg.*}).
 */
final class UnknownFencelineProperties implements ConfigurationPropertiesBindHandlerAdvisor {

    private static final String PREFIX = "fenceline";

    /** Every property of {@link FencelineProperties}, e.g. {@code fenceline.election.ttl}, sorted. */
    static final List<String> KNOWN = knownProperties();

    /** Suggestions shown for one unknown property, at most. */
    private static final int MAX_SUGGESTIONS = 3;

    /** Names whose values are not repeated in the message, since a misspelled password is still a password. */
    private static final List<String> SECRET_WORDS = List.of("password", "secret", "token", "credential");

    @Override
    public BindHandler apply(BindHandler bindHandler) {
        return new Handler(bindHandler);
    }

    /** One per binding (the advisor is applied for every {@code @ConfigurationProperties} bean it binds). */
    private static final class Handler extends AbstractBindHandler {
        private final NoUnboundElementsBindHandler unbound =
                new NoUnboundElementsBindHandler(BindHandler.DEFAULT, new UnboundElementsSourceFilter());

        /** Whether this binding is of {@link FencelineProperties}; other beans pass through untouched. */
        private boolean fenceline;

        Handler(BindHandler parent) {
            super(parent);
        }

        @Override
        public <T> Bindable<T> onStart(ConfigurationPropertyName name, Bindable<T> target, BindContext context) {
            if (context.getDepth() == 0) {
                Class<?> type = target.getType().resolve();
                fenceline = type != null && FencelineProperties.class.isAssignableFrom(type);
            }
            if (fenceline) {
                unbound.onStart(name, target, context);
            }
            return super.onStart(name, target, context);
        }

        @Override
        public Object onSuccess(
                ConfigurationPropertyName name, Bindable<?> target, BindContext context, Object result) {
            if (fenceline) {
                unbound.onSuccess(name, target, context, result);
            }
            return super.onSuccess(name, target, context, result);
        }

        @Override
        public void onFinish(ConfigurationPropertyName name, Bindable<?> target, BindContext context, Object result)
                throws Exception {
            if (fenceline && context.getDepth() == 0) {
                try {
                    unbound.onFinish(name, target, context, result);
                } catch (UnboundConfigurationPropertiesException e) {
                    throw unknown(e.getUnboundProperties().stream().toList());
                }
            }
            super.onFinish(name, target, context, result);
        }
    }

    /** The exception for these unknown properties: one sentence each, each on a line of its own when several. */
    static UnknownFencelinePropertyException unknown(List<ConfigurationProperty> properties) {
        List<String> names =
                properties.stream().map(p -> p.getName().toString()).toList();
        String message = properties.size() == 1
                ? describe(properties.get(0))
                : properties.size() + " properties under " + PREFIX + " are not Fenceline properties:"
                        + properties.stream().map(p -> "\n    " + describe(p)).collect(Collectors.joining());
        return new UnknownFencelinePropertyException(names, message);
    }

    private static String describe(ConfigurationProperty property) {
        String name = property.getName().toString();
        List<String> suggestions = suggestions(name);
        boolean secret = secret(name) || suggestions.stream().anyMatch(UnknownFencelineProperties::secret);
        String value = secret ? "value not shown" : "value '" + property.getValue() + "'";
        String where = property.getOrigin() == null ? "" : ", origin " + property.getOrigin();
        String valid = suggestions.isEmpty()
                ? "; " + validUnder(name)
                : "; did you mean " + String.join(" or ", suggestions) + "?";
        return name + " is not a Fenceline property (" + value + where + ")" + valid;
    }

    /**
     * The known properties closest to {@code unknown}, closest first: those within a few edits of it (the more the
     * longer its last part), and those with the same last part in another group ({@code fenceline.election.lock-timeout}
     * -> {@code fenceline.writer.lock-timeout}).
     */
    static List<String> suggestions(String unknown) {
        String wanted = uniform(unknown);
        String wantedLast = wanted.substring(wanted.lastIndexOf('.') + 1);
        int allowed = Math.max(2, wantedLast.length() / 3);
        record Candidate(String name, int distance) {}
        List<Candidate> close = new ArrayList<>();
        for (String known : KNOWN) {
            String candidate = uniform(known);
            int distance = distance(wanted, candidate);
            boolean sameLast =
                    candidate.substring(candidate.lastIndexOf('.') + 1).equals(wantedLast);
            if (distance <= allowed || sameLast) {
                close.add(new Candidate(known, sameLast ? Math.min(distance, allowed) : distance));
            }
        }
        return close.stream()
                .sorted(Comparator.comparingInt(Candidate::distance).thenComparing(Candidate::name))
                .limit(MAX_SUGGESTIONS)
                .map(Candidate::name)
                .toList();
    }

    /** "the properties under fenceline.election are ...": the group the unknown property is in, or the top level. */
    private static String validUnder(String unknown) {
        String group = PREFIX;
        for (String known : KNOWN) {
            String knownGroup = known.substring(0, known.lastIndexOf('.'));
            if (unknown.startsWith(knownGroup + ".") && knownGroup.length() > group.length()) {
                group = knownGroup;
            }
        }
        String under = group + ".";
        List<String> names = KNOWN.stream()
                .filter(k -> k.startsWith(under))
                .map(k -> k.substring(under.length()))
                .map(rest -> rest.contains(".") ? rest.substring(0, rest.indexOf('.')) + ".*" : rest)
                .distinct()
                .toList();
        return "the properties under " + group + " are " + String.join(", ", names);
    }

    private static boolean secret(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        return SECRET_WORDS.stream().anyMatch(lower::contains);
    }

    /** Lower case, without dashes, underscores and list indexes: {@code Key_Prefix[0]} and {@code keyprefix} alike. */
    private static String uniform(String name) {
        return name.toLowerCase(Locale.ROOT)
                .replaceAll("\\[[^]]*]", "")
                .replace("-", "")
                .replace("_", "");
    }

    /** Levenshtein distance. */
    private static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }

    /**
     * The properties as Spring binds them: a bean property with a setter is a property, a read-only one whose field
     * is marked {@link NestedConfigurationProperty} is a group (the mark the metadata processor describes a group by).
     * {@code ConfigurationMetadataTest} checks that this is the list the configuration metadata documents.
     */
    private static List<String> knownProperties() {
        List<String> known = new ArrayList<>();
        collect(PREFIX, FencelineProperties.class, known);
        known.sort(null);
        return List.copyOf(known);
    }

    private static void collect(String prefix, Class<?> type, List<String> into) {
        for (PropertyDescriptor property : BeanUtils.getPropertyDescriptors(type)) {
            String name = prefix + "." + PropertyNames.dashed(property.getName());
            if (property.getWriteMethod() != null) {
                into.add(name);
            } else if (property.getReadMethod() != null && isGroup(type, property.getName())) {
                collect(name, property.getPropertyType(), into);
            }
        }
    }

    private static boolean isGroup(Class<?> type, String propertyName) {
        Field field = ReflectionUtils.findField(type, propertyName);
        return field != null && field.isAnnotationPresent(NestedConfigurationProperty.class);
    }
}
