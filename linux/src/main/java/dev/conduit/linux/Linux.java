package dev.conduit.linux;

import dev.conduit.linux.internal.Abi;
import dev.conduit.linux.internal.FfmLibc;
import dev.conduit.linux.internal.Probe;
import dev.conduit.spi.Availability;
import dev.conduit.spi.ConduitException;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Entry point of this module: whether Linux system calls can be made in this JVM, and the
 * {@link Libc} that makes them.
 *
 * <p>Used by plugins: a plugin's {@code probe()} returns {@link #availability()} (or folds it
 * into its own), and the plugin calls {@link #libc()} once it is available. The check runs once
 * per JVM, on first use, and covers the operating system, the architecture (x86_64, aarch64)
 * and the JVM's native-access grant for this module
 * ({@code --enable-native-access=dev.conduit.linux}).
 */
public final class Linux {

    private Linux() {}

    /** Computed on first use of any method here, once. */
    private static final class Holder {
        static final Throwable CAUSE = Probe.unavailabilityCause();
    }

    /** Whether {@link #libc()} can be used. */
    public static boolean isAvailable() {
        return Holder.CAUSE == null;
    }

    /**
     * Why Linux system calls cannot be made, as an exception whose message names the remedy,
     * for example {@code the JVM denies native access to module dev.conduit.linux: start it with
     * --enable-native-access=dev.conduit.linux}; {@code null} if they can.
     */
    public static Throwable unavailabilityCause() {
        return Holder.CAUSE;
    }

    /**
     * Throws the {@linkplain #unavailabilityCause() cause} (wrapped) if Linux system calls cannot be made.
     *
     * @throws ConduitException naming the cause and its remedy
     */
    public static void ensureAvailability() {
        Throwable cause = Holder.CAUSE;
        if (cause != null) {
            throw new ConduitException("Linux system calls are unavailable: " + cause.getMessage(), cause);
        }
    }

    /** The result of the check in the form a plugin's {@code probe()} returns, with the architecture and kernel as details. */
    public static Availability availability() {
        Map<String, String> details = new LinkedHashMap<>();
        details.put("arch", Abi.ARCH.displayName());
        details.put("kernel", System.getProperty("os.version", ""));
        Throwable cause = Holder.CAUSE;
        return cause == null ? Availability.available(details) : Availability.unavailable(cause.getMessage(), details);
    }

    /**
     * The process-wide {@link Libc}.
     *
     * @throws ConduitException if Linux system calls cannot be made here; the message says why and what to do
     */
    public static Libc libc() {
        ensureAvailability();
        return FfmLibc.INSTANCE;
    }
}
