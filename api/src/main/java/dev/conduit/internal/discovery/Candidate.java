package dev.conduit.internal.discovery;

import dev.conduit.spi.ConduitPlugin;

/**
 * A plugin as found, before validation: an instance, or the failure to make one.
 *
 * @param plugin the instance, or {@code null} when it could not be made
 * @param label  what to call it when it has no usable name: provider class or directory
 * @param origin where it came from, for {@code conduit info}
 * @param error  why it could not be made, or {@code null}
 */
record Candidate(ConduitPlugin plugin, String label, String origin, String error) {

    static Candidate of(ConduitPlugin plugin, String origin) {
        return new Candidate(plugin, plugin.getClass().getName(), origin, null);
    }

    static Candidate broken(String label, String origin, String error) {
        return new Candidate(null, label, origin, error);
    }
}
