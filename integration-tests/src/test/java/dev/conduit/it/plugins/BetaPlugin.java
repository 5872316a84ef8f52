package dev.conduit.it.plugins;

/** Test plugin {@code it-beta}, priority 5. */
public final class BetaPlugin extends SimplePlugin {
    public BetaPlugin() {
        super("it-beta", 5);
    }
}
