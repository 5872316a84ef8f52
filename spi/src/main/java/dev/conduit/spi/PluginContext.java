package dev.conduit.spi;

import java.nio.file.Path;

/**
 * What the runtime gives a plugin when it probes it or opens one of its objects.
 *
 * <p>Implemented by the runtime; used by plugins. It is the plugin's only view of the runtime.
 */
public interface PluginContext {

    /** The configuration, including this plugin's own declared keys. */
    Config config();

    /**
     * This process's view of the shared directory ({@code CONDUIT_SHARED_DIR}) where plugins
     * publish files and sockets. A host and a container may mount it at different paths: every path
     * a plugin puts into a handle or an address is relative to it.
     */
    Path sharedDirectory();

    /** A logger named after the plugin. */
    System.Logger logger();
}
