package dev.conduit;

/**
 * One configuration key as resolved in this process, for {@code conduit info}.
 *
 * @param key         the key, e.g. {@code posix.dir}
 * @param property    the system property that sets it, e.g. {@code conduit.posix.dir}
 * @param environment the environment variable that sets it, e.g. {@code CONDUIT_POSIX_DIR}
 * @param value       the value in force as text, or {@code null} when unset
 * @param source      where the value comes from
 * @param owner       {@code "runtime"} or the name of the plugin that declares the key
 * @param doc         what the key does, and its accepted form
 */
public record ConfigEntry(String key, String property, String environment, String value, Source source,
                          String owner, String doc) {

    /** {@code key=value (source)}: the doc, a paragraph, is left to {@link #doc()} and {@code conduit info}. */
    @Override
    public String toString() {
        return key + "=" + (value == null ? "(unset)" : value) + " (" + source + ")";
    }

    /** Where a value comes from, strongest first. */
    public enum Source {
        BUILDER, SYSTEM_PROPERTY, ENVIRONMENT, DEFAULT
    }
}
