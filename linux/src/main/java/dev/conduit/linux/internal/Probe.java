package dev.conduit.linux.internal;

import dev.conduit.spi.ConduitException;

/**
 * Decides whether this JVM can make Linux system calls through FFM, and if not, says why in a
 * sentence that names the fix. Run once, by {@link dev.conduit.linux.Linux}.
 */
public final class Probe {

    private Probe() {}

    /** Why system calls cannot be made in this JVM, or {@code null} if they can. */
    public static Throwable unavailabilityCause() {
        return unavailabilityCause(System.getProperty("os.name", ""), System.getProperty("os.arch", ""),
                Probe.class.getModule(), FfmLibc::bind);
    }

    /**
     * The checks, in the order a person would fix them: the operating system, the architecture,
     * then whether binding the C library works (it fails with {@link IllegalCallerException} when
     * the JVM denies this module native access).
     *
     * @param bind binds and calls a first function; stands in for the real one in tests
     */
    static Throwable unavailabilityCause(String osName, String osArch, Module module, Runnable bind) {
        if (!osName.equals("Linux")) {
            return new ConduitException("dev.conduit.linux makes Linux system calls, but this JVM runs on " + osName);
        }
        if (Abi.Arch.of(osArch) == Abi.Arch.UNSUPPORTED) {
            return new ConduitException("dev.conduit.linux does not support the " + osArch
                    + " architecture: it encodes the Linux ABI of x86_64 and aarch64 only");
        }
        try {
            bind.run();
            return null;
        } catch (Throwable t) {
            IllegalCallerException denied = find(t, IllegalCallerException.class);
            if (denied != null) {
                return new ConduitException(nativeAccessDenied(module), denied);
            }
            return new ConduitException("dev.conduit.linux could not bind the C library: " + t, t);
        }
    }

    /**
     * Why binding failed when {@code missing} of the {@code looked} functions were not found. None
     * found at all is no C library's lack: the JDK's system lookup is empty when it could not load
     * its own {@code lib/libsyslookup.so} the first time the JVM used it (it returns a lookup that
     * finds nothing, for the JVM's life), as a process out of descriptors cannot. That was reported
     * as "the C library lacks ftruncate, fallocate, ..." with every function named, which sent the
     * reader after the C library.
     */
    static String missingSymbols(java.util.List<String> missing, int looked) {
        if (missing.size() < looked) return "the C library lacks " + String.join(", ", missing);
        return "the JVM's system lookup (Linker.nativeLinker().defaultLookup()) finds no C library function at all, not even "
                + missing.getLast() + ": the JDK could not load its lib/libsyslookup.so when this JVM first used it, and does not "
                + "try again. That happens to a process out of file descriptors then (EMFILE: raise its open-file limit, ulimit -n, "
                + "RLIMIT_NOFILE, systemd LimitNOFILE) or out of memory, or to a JDK without that file; restart the JVM once that is fixed";
    }

    /** The sentence for a JVM that denies native access, with the exact flag to add. */
    static String nativeAccessDenied(Module module) {
        String target = module.isNamed() ? module.getName() : "ALL-UNNAMED";
        String who = module.isNamed() ? "module " + module.getName() : "code on the class path";
        return "the JVM denies native access to " + who + ": start it with --enable-native-access=" + target;
    }

    private static <T extends Throwable> T find(Throwable thrown, Class<T> type) {
        // A handle bound in a static initializer surfaces as ExceptionInInitializerError.
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
        }
        return null;
    }
}
