package dev.conduit.it;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;

import java.util.Map;
import java.util.Properties;

/**
 * How this test JVM loads Conduit and its plugins, as the surefire execution says (system property
 * {@code it.loading}): on the module path or on the class path.
 */
enum Loading {
    MODULE_PATH("module "),
    CLASS_PATH("class path");

    /** How {@link dev.conduit.PluginInfo#origin()} describes a plugin loaded this way. */
    final String originPrefix;

    Loading(String originPrefix) {
        this.originPrefix = originPrefix;
    }

    static Loading current() {
        String v = System.getProperty("it.loading");
        if (v == null) {
            throw new IllegalStateException("system property it.loading is not set: run these tests with Maven "
                    + "(executions default-test and class-path of integration-tests/pom.xml)");
        }
        return switch (v) {
            case "module-path" -> MODULE_PATH;
            case "class-path" -> CLASS_PATH;
            default -> throw new IllegalStateException("it.loading=" + v + ": expected module-path or class-path");
        };
    }

    /** A builder that reads neither this JVM's environment nor its system properties. */
    static ConduitBuilder isolatedBuilder() {
        return Conduit.builder().environment(Map.of()).systemProperties(new Properties());
    }
}
