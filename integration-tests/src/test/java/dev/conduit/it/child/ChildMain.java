package dev.conduit.it.child;

import dev.conduit.Conduit;
import dev.conduit.ConfigEntry;
import dev.conduit.PluginInfo;

/**
 * Run in a second JVM by {@code EnvironmentChildProcessTest}: opens Conduit from its real
 * environment ({@link Conduit#open()}) and prints what it selected, one fact per line, on stdout.
 * Warnings go to stderr through {@link System.Logger}.
 */
public final class ChildMain {

    private ChildMain() {
    }

    public static void main(String[] args) {
        try (Conduit conduit = Conduit.open()) {
            System.out.println("selected=" + String.join(",", conduit.selectedPlugins()));
            for (ConfigEntry e : conduit.configuration()) {
                System.out.println("config " + e.key() + "=" + e.value() + " source=" + e.source());
            }
            for (PluginInfo p : conduit.plugins()) {
                System.out.println("plugin " + p.name() + " " + p.status() + " origin=" + p.origin());
            }
        }
    }
}
