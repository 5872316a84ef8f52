package dev.conduit;

import dev.conduit.internal.ConduitRuntime;
import dev.conduit.internal.RuntimeKeys;
import dev.conduit.internal.RuntimeSettings;
import dev.conduit.spi.ConduitPlugin;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;

/**
 * Configures and opens a {@link Conduit}. Values set here are the strongest configuration source,
 * above system properties ({@code conduit.x.y}), the environment ({@code CONDUIT_X_Y}) and
 * defaults. Not thread-safe; {@link #build()} may be called more than once. A null argument, or
 * a null element, key or value in one, is refused with a {@link NullPointerException} naming the
 * parameter.
 */
public final class ConduitBuilder {

    private final Map<String, String> values = new LinkedHashMap<>();
    private final List<ConduitPlugin> extraPlugins = new ArrayList<>();
    private Map<String, String> environment;
    private Properties systemProperties;
    private ClassLoader classLoader;
    private boolean discover = true;

    ConduitBuilder() {
    }

    /**
     * Sets configuration key {@code key} (e.g. {@code "posix.dir"}, or as a property,
     * {@code "conduit.posix.dir"}) to {@code value}, parsed as the key's type when the
     * {@code Conduit} is built. An unknown key fails {@link #build()}, naming the nearest known one,
     * and, when its first word is no plugin found here ({@code verbs.device} without the verbs
     * plugin), the plugins that were.
     */
    public ConduitBuilder set(String key, String value) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        values.put(key.startsWith("conduit.") ? key.substring("conduit.".length()) : key, value);
        return this;
    }

    /** The plugins to use, most preferred first, or {@code "^name"} to exclude: {@code transports}. */
    public ConduitBuilder transports(String... names) {
        return set("transports", String.join(",", nonNullElements(names, "names")));
    }

    /** This process's view of the shared directory: {@code shared.dir}. */
    public ConduitBuilder sharedDirectory(Path directory) {
        return set("shared.dir", Objects.requireNonNull(directory, "directory").toString());
    }

    /**
     * Directories of plugin jars, each plugin loaded in its own module layer: {@code plugin.path}.
     * That key is text, as set from a system property or the environment, and the directories are
     * set there as such, each read back by the one reading of the key (which {@code conduit info}
     * shows): separated by {@link File#pathSeparator}, blanks at each end dropped.
     *
     * @throws IllegalArgumentException for a directory that reading would not give back, naming it
     *                                  and what it would be read as: one whose path holds the path
     *                                  separator, begins or ends with a blank, or is empty (until
     *                                  2026-12-07 such a directory was never searched: it was read
     *                                  as others, reported as not existing, or as none)
     */
    public ConduitBuilder pluginPath(Path... directories) {
        List<String> names = new ArrayList<>();
        for (Path directory : nonNullElements(directories, "directories")) {
            String name = directory.toString();
            List<String> readBack = RuntimeKeys.pluginDirectories(name).stream().map(Path::toString).toList();
            if (!readBack.equals(List.of(name))) {
                throw new IllegalArgumentException("plugin directory '" + name + "' cannot be given through plugin.path, whose "
                        + "directories are separated by '" + File.pathSeparator + "' with blanks at each end dropped: it would "
                        + "be read as " + (readBack.isEmpty() ? "no directory" : "'" + String.join("' and '", readBack) + "'")
                        + ". Rename it, or give a symbolic link to it whose path has no '" + File.pathSeparator + "' and no blank at "
                        + "either end; an empty or relative path is read as meant once absolute (Path.toAbsolutePath())");
            }
            names.add(name);
        }
        return set("plugin.path", String.join(File.pathSeparator, names));
    }

    /**
     * Whether a plugin that declares only {@code SINGLE} may serve a {@code SERIALIZED} or
     * {@code MULTI} worker by running every call on one runtime-owned thread
     * ({@code thread.confine}); otherwise such a worker is refused.
     */
    public ConduitBuilder threadConfinement(boolean enabled) {
        return set("thread.confine", Boolean.toString(enabled));
    }

    /**
     * Adds a plugin instance to those discovered, as if found by {@link java.util.ServiceLoader}
     * (same validation, probing and selection). For embedding and tests.
     */
    public ConduitBuilder addPlugin(ConduitPlugin plugin) {
        extraPlugins.add(Objects.requireNonNull(plugin, "plugin"));
        return this;
    }

    /** Whether to look plugins up with {@link java.util.ServiceLoader} (default {@code true}). */
    public ConduitBuilder discoverPlugins(boolean discover) {
        this.discover = discover;
        return this;
    }

    /** The class loader whose class path is searched for plugins (default: the thread's context loader). */
    public ConduitBuilder classLoader(ClassLoader loader) {
        this.classLoader = Objects.requireNonNull(loader, "loader");
        return this;
    }

    /** Replaces the process environment as a configuration source. For embedding and tests. */
    public ConduitBuilder environment(Map<String, String> environment) {
        Objects.requireNonNull(environment, "environment");
        environment.forEach((name, value) -> {
            Objects.requireNonNull(name, "environment: a variable's name");
            Objects.requireNonNull(value, () -> "environment: the value of variable " + name);
        });
        this.environment = Map.copyOf(environment);
        return this;
    }

    /**
     * Replaces the system properties as a configuration source, copied as {@link Properties#getProperty}
     * reads them: with the defaults they were made over ({@code new Properties(System.getProperties())}
     * with a few set on top; until 2026-12-07 those defaults were dropped). For embedding and tests.
     */
    public ConduitBuilder systemProperties(Properties properties) {
        Objects.requireNonNull(properties, "properties");
        Properties copy = new Properties();
        for (String name : properties.stringPropertyNames()) copy.setProperty(name, properties.getProperty(name));
        this.systemProperties = copy;
        return this;
    }

    /**
     * {@code array}, refused with a {@link NullPointerException} naming {@code parameter} (and the
     * index) when it or an element is null: a null name joined into {@code transports} would
     * otherwise be read as a plugin called "null".
     */
    private static <T> T[] nonNullElements(T[] array, String parameter) {
        Objects.requireNonNull(array, parameter);
        for (int i = 0; i < array.length; i++) {
            if (array[i] == null) throw new NullPointerException(parameter + "[" + i + "]");
        }
        return array;
    }

    /**
     * Discovers and validates plugins, resolves configuration, probes the plugins that
     * {@code transports} leaves in (the others are {@code EXCLUDED}, never probed), and selects.
     *
     * @throws dev.conduit.spi.ConfigException when a value is malformed, a builder key is unknown,
     *         or {@code transports} names a plugin that was not found (the message lists those found)
     *         or mixes names to use with names to exclude; before any probe runs
     * @throws dev.conduit.spi.ConduitException when the calling thread is interrupted while probes run
     *         (its interrupt status is kept): a {@code Conduit} with only the plugins probed so far
     *         would depend on when the interrupt came
     */
    public Conduit build() {
        ClassLoader loader = classLoader != null ? classLoader : Thread.currentThread().getContextClassLoader();
        return ConduitRuntime.open(new RuntimeSettings(
                Map.copyOf(values),
                environment != null ? environment : System.getenv(),
                systemProperties != null ? systemProperties : System.getProperties(),
                loader != null ? loader : ConduitBuilder.class.getClassLoader(),
                discover,
                List.copyOf(extraPlugins)));
    }
}
