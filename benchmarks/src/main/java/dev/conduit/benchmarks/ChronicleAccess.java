package dev.conduit.benchmarks;

import java.util.ArrayList;
import java.util.List;

/**
 * What Chronicle Bytes needs of {@code java.base} on the class path (README, "Chronicle"), checked
 * before its first class loads. The Chronicle benchmarks' forks get it from their
 * {@code @Fork(jvmArgsAppend)}, which a {@code -jvmArgsAppend} on JMH's command line replaces, and
 * a run without it failed in Chronicle's static initializer with "module java.base does not open
 * java.lang.reflect to unnamed module", naming no flag and no remedy.
 */
final class ChronicleAccess {

    private ChronicleAccess() {
    }

    /** The flags this JVM lacks, as they are written on a command line; empty when it has them all. */
    static List<String> missing() {
        Module base = Object.class.getModule();
        Module here = ChronicleAccess.class.getModule();
        List<String> missing = new ArrayList<>();
        if (!base.isOpen("java.lang.reflect", here)) missing.add("--add-opens=java.base/java.lang.reflect=ALL-UNNAMED");
        if (!base.isExported("sun.nio.ch", here)) missing.add("--add-exports=java.base/sun.nio.ch=ALL-UNNAMED");
        if (!base.isExported("jdk.internal.ref", here)) missing.add("--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED");
        return missing;
    }

    /** Fails naming the flags this JVM lacks and where they go; for the static initializer of a Chronicle benchmark. */
    static void require(Class<?> benchmark) {
        List<String> missing = missing();
        if (missing.isEmpty()) return;
        throw new IllegalStateException(benchmark.getSimpleName() + " needs Chronicle Bytes' flags, and this JVM lacks "
                + String.join(" ", missing) + ": a -jvmArgsAppend on JMH's command line replaces the benchmark's own (@Fork), so "
                + "repeat them there, with the benchmark's others (docs/performance.md, \"Running\"); with -f 0, give them to "
                + "JMH's own JVM");
    }
}
