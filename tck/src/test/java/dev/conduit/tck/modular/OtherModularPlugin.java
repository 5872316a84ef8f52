package dev.conduit.tck.modular;

import dev.conduit.tck.LoopbackPlugin;

/** A second plugin of the module: what a module that provides only it declares for ServiceLoader. */
public final class OtherModularPlugin extends LoopbackPlugin {
}
