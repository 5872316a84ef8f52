package dev.conduit.chronicle.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * What Chronicle Bytes needs of {@code java.base} (README, "Chronicle"), checked before its first
 * class initializes: {@code java.lang.reflect} opened to it and {@code sun.nio.ch} and
 * {@code jdk.internal.ref} exported to it. Without the opening Chronicle's static initializer
 * failed with {@code ExceptionInInitializerError} ("module java.base does not open
 * java.lang.reflect to unnamed module"); without the exports the first use of its native memory
 * ({@code Bytes.copy()} of a view) failed in its class {@code OS}'s initializer with
 * {@code IllegalAccessError} ("does not export sun.nio.ch"). Either named no flag and no remedy,
 * and every later use failed with {@code NoClassDefFoundError}, for the life of the JVM. (The
 * Chronicle benchmarks check the same for their forks.)
 */
public final class ChronicleFlags {

    private ChronicleFlags() {
    }

    /**
     * Throws when this JVM lacks any of the three, naming every one it lacks. Until 2026-12-07 it
     * checked the opening alone, and a JVM with only that flag met Chronicle's initializer error
     * (WithoutChronicleFlagsTest#aJvmWithOnlyTheReflectionFlagIsToldWhichFlagsItLacksRatherThanMeetingChroniclesInitializerError).
     */
    public static void require() {
        Module base = Object.class.getModule();
        // A class literal loads the class without initializing it: Chronicle's initializer is what fails.
        Module chronicle = net.openhft.chronicle.core.Jvm.class.getModule();
        String to = chronicle.isNamed() ? chronicle.getName() : "ALL-UNNAMED";
        List<String> missing = new ArrayList<>();
        if (!base.isOpen("java.lang.reflect", chronicle)) missing.add("--add-opens=java.base/java.lang.reflect=" + to);
        if (!base.isExported("sun.nio.ch", chronicle)) missing.add("--add-exports=java.base/sun.nio.ch=" + to);
        if (!base.isExported("jdk.internal.ref", chronicle)) missing.add("--add-exports=java.base/jdk.internal.ref=" + to);
        if (missing.isEmpty()) return;
        throw new IllegalStateException("Chronicle Bytes cannot start in this JVM: it lacks " + String.join(" ", missing)
                + " (Chronicle " + (chronicle.isNamed() ? "is module " + to : "is on the class path")
                + "); start java with them, and with --sun-misc-unsafe-memory-access=allow -Dchronicle.analytics.disable=true "
                + "(README, \"Chronicle\", lists them for the module path and the class path)");
    }
}
