package dev.fenceline.testkit.junit;

import dev.fenceline.testkit.EtcdCluster;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A real 3-member etcd cluster per test class, injected as an {@link EtcdCluster} parameter and killed (data
 * wiped) after the class. Tests that pause or kill members should resume/restart them or accept that later
 * tests in the same class see the damage.
 */
public final class EtcdClusterExtension implements BeforeAllCallback, AfterAllCallback, ParameterResolver {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(EtcdClusterExtension.class);

    @Override
    public void beforeAll(ExtensionContext context) {
        cluster(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        EtcdCluster cluster = classStore(context).remove("etcd", EtcdCluster.class);
        if (cluster != null) {
            cluster.close();
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == EtcdCluster.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return cluster(extensionContext);
    }

    private static EtcdCluster cluster(ExtensionContext context) {
        return classStore(context).getOrComputeIfAbsent("etcd", k -> EtcdCluster.start(3), EtcdCluster.class);
    }

    private static ExtensionContext.Store classStore(ExtensionContext context) {
        ExtensionContext c = context;
        while (c.getTestMethod().isPresent()) {
            c = c.getParent().orElseThrow();
        }
        return c.getStore(NS);
    }
}
