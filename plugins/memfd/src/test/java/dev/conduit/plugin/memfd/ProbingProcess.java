package dev.conduit.plugin.memfd;

import dev.conduit.spi.Availability;

import java.nio.file.Path;

/**
 * The main class of a JVM that probes the memfd plugin on one shared directory and prints
 * {@code available=<bool> reason=<text>}: {@code <shared dir>}. Started by {@link WithoutDacOverride}.
 */
public final class ProbingProcess {

    private ProbingProcess() {}

    public static void main(String[] args) {
        Availability availability = new MemfdPlugin().probe(TestContext.of(Path.of(args[0])));
        System.out.println("available=" + availability.isAvailable() + " reason=" + availability.reason());
    }
}
