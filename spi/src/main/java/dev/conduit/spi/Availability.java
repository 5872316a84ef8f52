package dev.conduit.spi;

import java.util.Map;
import java.util.Objects;

/**
 * The result of {@link ConduitPlugin#probe(PluginContext)}: available, or unavailable with a
 * reason a person can act on ("no RDMA devices", "libibverbs.so.1 not found",
 * "/dev/dax0.0: permission denied"), plus details for {@code conduit info} (devices, ports,
 * directories), in a stable order.
 *
 * <p>Made by plugins; read by the runtime and shown by {@code conduit info}.
 *
 * @param isAvailable whether the plugin can be used in this process now
 * @param reason    why not, with the remedy; empty when available
 * @param details   facts the probe found, shown by {@code conduit info}; keys in insertion order
 */
public record Availability(boolean isAvailable, String reason, Map<String, String> details) {

    public Availability {
        Objects.requireNonNull(reason, "reason");
        details = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(details));
        if (!isAvailable && reason.isBlank()) {
            throw new IllegalArgumentException("an unavailable plugin must say why");
        }
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
}
