package dev.conduit.it.plugins;

/** Test plugin {@code it-alpha}, priority 10. */
public final class AlphaPlugin extends SimplePlugin {
    public AlphaPlugin() {
        super("it-alpha", 10);
    }
}
