package dev.fenceline.testkit.junit;

import dev.fenceline.testkit.PostgresServer;
import dev.fenceline.testkit.TestDatabase;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A fresh database per test class on the JVM's shared {@link PostgresServer}, injected as a {@link TestDatabase}
 * parameter into constructors, lifecycle methods and tests, and dropped after the class.
 */
public final class PostgresExtension implements BeforeAllCallback, AfterAllCallback, ParameterResolver {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(PostgresExtension.class);

    @Override
    public void beforeAll(ExtensionContext context) {
        database(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        TestDatabase db = classStore(context).remove("db", TestDatabase.class);
        if (db != null) {
            db.close();
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        Class<?> type = parameterContext.getParameter().getType();
        return type == TestDatabase.class || type == PostgresServer.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        TestDatabase db = database(extensionContext);
        return parameterContext.getParameter().getType() == PostgresServer.class ? db.server() : db;
    }

    private static TestDatabase database(ExtensionContext context) {
        return classStore(context)
                .getOrComputeIfAbsent(
                        "db",
                        k -> PostgresServer.shared()
                                .createDatabase(context.getRequiredTestClass().getSimpleName()),
                        TestDatabase.class);
    }

    private static ExtensionContext.Store classStore(ExtensionContext context) {
        ExtensionContext c = context;
        while (c.getTestMethod().isPresent()) {
            c = c.getParent().orElseThrow();
        }
        return c.getStore(NS);
    }
}
