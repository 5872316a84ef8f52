package dev.conduit.tck.modular;

import dev.conduit.tck.LoopbackPlugin;

/**
 * The loopback fixture as a class of a named module ({@code BrokenPlugins.InANamedModule} defines this package in one),
 * for the check of a module's {@code provides} clause, which the class path's self-tests never reach.
 */
public final class ModularPlugin extends LoopbackPlugin {
}
