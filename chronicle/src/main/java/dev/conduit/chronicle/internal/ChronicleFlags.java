package dev.conduit.chronicle.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * What Chronicle Bytes needs of {@code java.base} (README, "Chronicle"), checked before its first
 * class initializes. Without {@code --add-opens=java.base/java.lang.reflect} Chronicle's static
 * initializer failed with {@code ExceptionInInitializerError} ("module java.base does not open
 * java.lang.reflect to unnamed module"), naming no flag and no remedy, and every later use with
 * {@code NoClassDefFoundError}. (The Chronicle benchmarks check the same for their forks.)
 */
public final class ChronicleFlags {

    private ChronicleFlags() {
    }

    /**
     * Throws when this JVM does not open {@code java.lang.reflect} to Chronicle, the one flag
     * without which Chronicle cannot start, naming every one of its flags this JVM lacks.
     */
    public static void require() {
        Module base = Object.class.getModule();
        // A class literal loads the class without initializing it: Chronicle's initializer is what fails.
        Module chronicle = net.openhft.chronicle.core.Jvm.class.getModule();
        if (base.isOpen("java.lang.reflect", chronicle)) return;
        String to = chronicle.isNamed() ? chronicle.getName() : "ALL-UNNAMED";
        List<String> missing = new ArrayList<>();
        missing.add("--add-opens=java.base/java.lang.reflect=" + to);
        if (!base.isExported("sun.nio.ch", chronicle)) missing.add("--add-exports=java.base/sun.nio.ch=" + to);
        if (!base.isExported("jdk.internal.ref", chronicle)) missing.add("--add-exports=java.base/jdk.internal.ref=" + to);
        throw new IllegalStateException("Chronicle Bytes cannot start in this JVM: it lacks " + String.join(" ", missing)
                + " (Chronicle " + (chronicle.isNamed() ? "is module " + to : "is on the class path")
                + "); start java with them, and with --sun-misc-unsafe-memory-access=allow -Dchronicle.analytics.disable=true "
                + "(README, \"Chronicle\", lists them for the module path and the class path)");
    }
}
