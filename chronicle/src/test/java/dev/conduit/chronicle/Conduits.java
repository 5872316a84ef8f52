package dev.conduit.chronicle;

import dev.conduit.Conduit;

import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

/** Conduits of the posix plugin on a test's shared directory, configured by the builder alone. */
final class Conduits {

    private Conduits() {
    }

    static Conduit posix(Path shared) {
        return Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports("posix").build();
    }
}
