package dev.conduit.testing;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.PluginInfo;

import java.util.Map;
import java.util.Properties;

/** Builders isolated from this JVM's environment, system properties and class path. */
public final class TestConduits {

    private TestConduits() {
    }

    /** A builder that discovers nothing and reads an empty environment and no system properties. */
    public static ConduitBuilder isolated() {
        return Conduit.builder().discoverPlugins(false).environment(Map.of()).systemProperties(new Properties());
    }

    /** The info of the one plugin called {@code name}; fails if there is none or more than one. */
    public static PluginInfo info(Conduit conduit, String name) {
        var matches = conduit.plugins().stream().filter(p -> p.name().equals(name)).toList();
        if (matches.size() != 1) {
            throw new AssertionError("expected one plugin '" + name + "', found " + matches.size() + ": " + conduit.plugins());
        }
        return matches.getFirst();
    }
}
