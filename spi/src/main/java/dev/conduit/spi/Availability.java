package dev.conduit.spi;

import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;

/**
 * The result of {@link ConduitPlugin#probe(PluginContext)}: available, or unavailable with a
 * reason a person can act on ("no RDMA devices", "libibverbs.so.1 not found",
 * "/dev/dax0.0: permission denied"), plus details for {@code conduit info} (devices, ports,
 * directories), in a stable order.
 *
 * <p>An available plugin may still be unable to offer some of the capabilities it declares in this
 * environment, while the others work. memfd on a shared directory this process cannot write
 * imports, but opens no memory provider and no transport. The probe says so with
 * {@link #without(Capability, String)}, and the runtime then never asks for those capabilities
 * here: no pool over the plugin, no export or import, no transport of it in a worker, no RMA or
 * atomics through it. What is asked for anyway is refused with the reason given (a worker only when
 * no transport is left). (Since SPI 1.1.)
 *
 * <p>Made by plugins; read by the runtime and shown by {@code conduit info}.
 *
 * @param isAvailable     whether the plugin can be used in this process now
 * @param reason          why not, with the remedy; empty when available
 * @param details         facts the probe found, shown by {@code conduit info}; keys in insertion order
 * @param unsupportedHere declared capabilities this environment rules out, each with why and the remedy;
 *                        empty for an unavailable plugin
 */
public record Availability(boolean isAvailable, String reason, Map<String, String> details,
                           Map<Capability, String> unsupportedHere) {

    public Availability {
        Objects.requireNonNull(reason, "reason");
        details = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(details));
        EnumMap<Capability, String> unsupported = new EnumMap<>(Capability.class);
        unsupported.putAll(unsupportedHere);
        unsupportedHere = java.util.Collections.unmodifiableMap(unsupported);
        if (!isAvailable && reason.isBlank()) {
            throw new IllegalArgumentException("an unavailable plugin must say why");
        }
        if (!isAvailable && !unsupportedHere.isEmpty()) {
            throw new IllegalArgumentException("an unavailable plugin offers nothing: it has no capabilities to rule out");
        }
        unsupportedHere.forEach((capability, why) -> {
            if (why == null || why.isBlank()) throw new IllegalArgumentException("say why " + capability + " is not supported here");
        });
    }

    /** As SPI 1.0 made it: every declared capability supported where available. */
    public Availability(boolean isAvailable, String reason, Map<String, String> details) {
        this(isAvailable, reason, details, Map.of());
    }

    /** Available, with no details. */
    public static Availability available() {
        return new Availability(true, "", Map.of());
    }

    /** Available, with details for {@code conduit info}; iteration order of {@code details} is kept. */
    public static Availability available(Map<String, String> details) {
        return new Availability(true, "", details);
    }

    /** Unavailable because of {@code reason}, which should say what to do about it. */
    public static Availability unavailable(String reason) {
        return new Availability(false, reason, Map.of());
    }

    /** Unavailable, with the details the probe found before it gave up. */
    public static Availability unavailable(String reason, Map<String, String> details) {
        return new Availability(false, reason, details);
    }

    /**
     * This availability with {@code capability} ruled out here because of {@code why}, which should
     * say what to do about it. Meant for a capability the plugin declares (the runtime ignores any
     * other, and the TCK fails it). An unavailable plugin offers nothing, so for one this returns
     * this availability unchanged, its reason intact. Since SPI 1.1.
     *
     * @throws IllegalArgumentException when this is available and {@code why} is null or blank
     */
    public Availability without(Capability capability, String why) {
        Objects.requireNonNull(capability, "capability");
        if (!isAvailable) return this;
        Map<Capability, String> more = new EnumMap<>(Capability.class);
        more.putAll(unsupportedHere);
        more.put(capability, why);
        return new Availability(isAvailable, reason, details, more);
    }
}
