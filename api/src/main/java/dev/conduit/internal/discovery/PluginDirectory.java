package dev.conduit.internal.discovery;

import dev.conduit.spi.BestEffortLog;
import dev.conduit.spi.ConduitPlugin;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipFile;

/**
 * Loads plugins from a plugin directory ({@code plugin.path}), like Kafka Connect's plugin path:
 * every sub-directory is one plugin (all the jars in it, its own dependencies included) and every
 * jar at the top level is a plugin on its own.
 *
 * <p>Each plugin gets its own child {@link ModuleLayer} of the runtime's layer, with its own class
 * loader, so two plugins may bundle different versions of one library. When the runtime itself
 * runs on the class path there is no layer to extend; each plugin then gets its own
 * {@link URLClassLoader} instead. That loader asks the application's class path first, so a
 * library the application also has wins over the plugin's copy: only the module layers isolate
 * fully (docs/runtime.md).
 */
final class PluginDirectory {

    private static final System.Logger LOG = System.getLogger("dev.conduit");

    private PluginDirectory() {
    }

    /**
     * {@code directories} each once, by where each leads ({@link Path#toRealPath}: {@code /a}, {@code /a/}, {@code /b/../a}
     * and a symbolic link to {@code /a} are one), as first named: a directory plugin.path named twice was loaded twice, each
     * of its plugins then SHADOWED by itself (until 2026-12-07). One that does not resolve, not there, is compared as written,
     * normalized; {@link #load} reports it.
     */
    static List<Path> distinct(List<Path> directories) {
        Map<Path, Path> byWhereTheyLead = new LinkedHashMap<>();
        for (Path directory : directories) byWhereTheyLead.putIfAbsent(whereItLeads(directory), directory);
        return List.copyOf(byWhereTheyLead.values());
    }

    private static Path whereItLeads(Path directory) {
        try {
            return directory.toRealPath();
        } catch (IOException e) {
            return directory.toAbsolutePath().normalize();
        }
    }

    /**
     * The plugins in {@code directory}, one of those {@code pathSource} ({@link dev.conduit.spi.Config#sourceOf}
     * of {@code plugin.path}) names: where to fix a directory that is not there.
     */
    static List<Candidate> load(Path directory, String pathSource) {
        return load(directory, PluginDirectory.class.getModule().getLayer(), pathSource);
    }

    /**
     * As {@link #load(Path, String)}, with each plugin's layer a child of {@code parent} ({@code null}: the
     * runtime is on the class path, each plugin gets a class loader). Tests choose the parent.
     */
    static List<Candidate> load(Path directory, ModuleLayer parent, String pathSource) {
        List<Candidate> found = new ArrayList<>();
        if (!Files.isDirectory(directory)) {
            // Named where it was set: a user who set it in the builder or a system property has no variable to fix. A jar
            // listed as on a class path is the likely slip: its directory is what to give.
            Path jarDirectory = directory.toAbsolutePath().getParent();
            boolean aJar = Files.isRegularFile(directory) && directory.getFileName().toString().endsWith(".jar") && jarDirectory != null;
            if (unreachable(directory)) {
                // It may well be there: "does not exist" sent its user to fix a plugin.path that was right.
                found.add(Candidate.broken(directory.toString(), "plugin directory " + directory, "cannot reach plugin directory "
                        + directory + ": EACCES (a directory on its path does not let this user, " + System.getProperty("user.name")
                        + ", search it): make each directory on the path searchable for this user (chmod +x), or fix plugin.path "
                        + "(from " + pathSource + ")"));
                return found;
            }
            found.add(Candidate.broken(directory.toString(), "plugin directory " + directory, "plugin directory " + directory
                    + (aJar ? " is a jar, not a directory: plugin.path lists directories, and every jar at the top of one is a "
                    + "plugin; give the jar's directory, " + jarDirectory + ", or one that holds only this jar; fix plugin.path (from "
                    : " does not exist or is not a directory; fix plugin.path (from ") + pathSource + ")"));
            return found;
        }
        List<Path> entries;
        try (Stream<Path> s = Files.list(directory)) {
            entries = s.sorted().toList();
        } catch (IOException | UncheckedIOException e) {
            // Its plugins are all missing: said with its cause and remedy, and where plugin.path was set, not as the bare
            // exception (until 2026-12-07 "cannot list plugin directory /p: java.nio.file.AccessDeniedException: /p"; one
            // from reading its entries, not opening it, escaped the build as an UncheckedIOException).
            found.add(Candidate.broken(directory.toString(), "plugin directory " + directory, "cannot list plugin directory "
                    + directory + ": " + listFailure(e, "fix plugin.path (from " + pathSource + ")")));
            return found;
        }
        if (!entries.isEmpty() && unreachable(entries.getFirst())) {
            // Listed but not searchable (r--): no entry can be looked at, and each passed for neither a jar nor a directory,
            // every plugin skipped without a word (until 2026-12-07). Said once, for the directory, the one cause: which entry is
            // a directory cannot be told, and each reported on its own had a README BROKEN beside the plugins.
            found.add(Candidate.broken(directory.toString(), "plugin directory " + directory, "cannot look at the entries of plugin "
                    + "directory " + directory + " (" + entries.size() + ": " + names(entries) + "), so none of them, jar or plugin's "
                    + "sub-directory, can be loaded: " + notSearchable(directory, "fix plugin.path (from " + pathSource + ")")));
            return found;
        }
        for (Path entry : entries) {
            List<Path> jars;
            if (Files.isDirectory(entry)) {
                List<Path> listed;
                try (Stream<Path> s = Files.list(entry)) {
                    listed = s.sorted().toList();
                } catch (IOException | UncheckedIOException e) {
                    found.add(Candidate.broken(entry.toString(), "plugin directory " + entry, "cannot list " + entry + ": "
                            + listFailure(e, "take it out of the plugin directory")));
                    continue;
                }
                jars = listed.stream().filter(PluginDirectory::isJar).toList();
                if (jars.isEmpty()) {
                    Optional<Path> hidden = listed.stream().filter(p -> p.getFileName().toString().endsWith(".jar"))
                            .filter(PluginDirectory::unreachable).findFirst();
                    if (hidden.isPresent()) {
                        found.add(Candidate.broken(entry.getFileName().toString(), "plugin directory " + entry, "cannot look at "
                                + hidden.get() + ": " + notSearchable(entry, "take it out of the plugin directory")));
                        continue;
                    }
                    // An empty directory is nothing; jars only further down are a plugin unpacked one level too deep.
                    Optional<Path> nested = jarBelow(entry);
                    if (nested.isPresent()) {
                        found.add(Candidate.broken(entry.getFileName().toString(), "plugin directory " + entry,
                                "no jar at the top of " + entry + " (found " + entry.relativize(nested.get()) + " below it): "
                                        + "a plugin's jars, its dependencies' too, go directly into its directory"));
                    }
                    continue;
                }
            } else if (isJar(entry)) {
                jars = List.of(entry);
            } else {
                continue;
            }
            found.addAll(loadPlugin(entry, jars, parent));
        }
        return found;
    }

    /**
     * Hides the copies of Conduit's own modules ({@code dev.conduit.spi}, {@code dev.conduit},
     * {@code dev.conduit.linux}) that a plugin directory may bundle (e.g. made by
     * {@code dependency:copy-dependencies}): the plugin must implement the runtime's
     * {@code ConduitPlugin}, not a second copy of it, or the runtime would not see it as a plugin
     * at all; and a second {@code dev.conduit.linux} in a child layer would have no native access
     * (only boot-layer modules get {@code --enable-native-access}), so the parent layer's copy is
     * used when there is one (resolved at start-up: required by a module, or named by
     * {@code --add-modules}); when there is none, the bundled copy is used, without native access.
     * Every other bundled module stays the plugin's own.
     */
    private static ModuleFinder withoutConduitModules(ModuleFinder bundled, ModuleLayer parent) {
        Set<String> shared = parent.findModule(LINUX_MODULE).isPresent()
                ? Set.of(ConduitPlugin.class.getModule().getName(), PluginDirectory.class.getModule().getName(), LINUX_MODULE)
                : Set.of(ConduitPlugin.class.getModule().getName(), PluginDirectory.class.getModule().getName());
        return new ModuleFinder() {
            @Override
            public java.util.Optional<ModuleReference> find(String name) {
                return shared.contains(name) ? java.util.Optional.empty() : bundled.find(name);
            }

            @Override
            public Set<ModuleReference> findAll() {
                return bundled.findAll().stream().filter(r -> !shared.contains(r.descriptor().name())).collect(Collectors.toSet());
            }
        };
    }

    /** The module of Conduit's libc layer, which native access is granted to by name on the command line. */
    private static final String LINUX_MODULE = "dev.conduit.linux";

    /**
     * Why listing a directory failed ({@code e}, or the {@link IOException} an {@link UncheckedIOException} carries), and what
     * to do: for a permission refused, to grant it, or else {@code otherwise}; for any other cause, {@code otherwise}.
     */
    private static String listFailure(Exception e, String otherwise) {
        Exception cause = e instanceof UncheckedIOException u ? u.getCause() : e;
        return permissionDenied(cause)
                ? "EACCES (" + ServiceDiscovery.describe(cause) + "): make it readable and searchable for this user ("
                + System.getProperty("user.name") + ", chmod u+rx or its group's or others' bits), or " + otherwise
                : cause.getClass().getSimpleName() + " (" + ServiceDiscovery.describe(cause) + "): " + otherwise;
    }

    /** The names of the first few of {@code entries}, and how many more there are. */
    private static String names(List<Path> entries) {
        int shown = Math.min(entries.size(), 8);
        String names = entries.subList(0, shown).stream().map(p -> p.getFileName().toString()).collect(Collectors.joining(", "));
        return shown == entries.size() ? names : names + " and " + (entries.size() - shown) + " more";
    }

    /** Why the entries of {@code directory}, which this user may list, cannot be looked at, and what to do, or {@code otherwise}. */
    private static String notSearchable(Path directory, String otherwise) {
        return "EACCES (plugin directory " + directory + " lets this user, " + System.getProperty("user.name") + ", list it but not "
                + "search it): make it searchable for this user (chmod u+x or its group's or others' bits), or " + otherwise;
    }

    /**
     * Whether {@code e} or a cause of it is a permission refused (EACCES): NIO's {@link AccessDeniedException}, or java.io's
     * "(Permission denied)" that {@link ZipFile} throws in a {@code FileNotFoundException}. Its remedy is a permission, not a
     * new copy of the file or another plugin.path.
     */
    private static boolean permissionDenied(Throwable e) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable c = e; c != null && seen.add(c); c = c.getCause()) {
            if (c instanceof AccessDeniedException || (c.getMessage() != null && c.getMessage().endsWith("(Permission denied)"))) {
                return true;
            }
        }
        return false;
    }

    /** Whether {@code path} cannot be looked at since a directory above it refuses this user a search (EACCES on its stat). */
    private static boolean unreachable(Path path) {
        try {
            Files.readAttributes(path, BasicFileAttributes.class);
            return false;
        } catch (IOException e) {
            return permissionDenied(e);
        }
    }

    /** A jar somewhere below {@code directory}, a few levels at most. */
    private static Optional<Path> jarBelow(Path directory) {
        try (Stream<Path> s = Files.walk(directory, 3)) {
            return s.filter(PluginDirectory::isJar).sorted().findFirst();
        } catch (IOException | UncheckedIOException e) {
            return Optional.empty();
        }
    }

    /**
     * Closes the loader of {@code entry}, of which no plugin came: looking for META-INF/services
     * opened its jars, and every build of a {@code Conduit} reads plugin.path again, so each left
     * open until a garbage collection was one descriptor more per build (until 2026-12-07,
     * PluginDirectoryTest#aJarThatHoldsNoPluginIsLeftClosedOnTheClassPath). The loader of a plugin
     * stays open: the plugin loads its classes through it as long as it may run.
     */
    private static void closeUnused(URLClassLoader loader, Path entry) {
        try {
            loader.close();
        } catch (IOException e) {
            BestEffortLog.warn(LOG, () -> "closing the class loader of " + entry + ", of which no plugin came, failed: its jars may "
                    + "stay open until a garbage collection", e);
        }
    }

    /**
     * A jar, or a symbolic link named as one whose target is gone: skipped as no file, that plugin
     * went missing without a word until 2026-12-07; {@link #loadPlugin} reports it.
     */
    private static boolean isJar(Path p) {
        return p.getFileName().toString().endsWith(".jar") && (Files.isRegularFile(p) || isDanglingLink(p));
    }

    private static boolean isDanglingLink(Path p) {
        return Files.isSymbolicLink(p) && !Files.exists(p);
    }

    /** Where the symbolic link {@code link} points, as it says, or why that cannot be read. */
    private static String target(Path link) {
        try {
            return Files.readSymbolicLink(link).toString();
        } catch (IOException e) {
            return "a target it cannot say (" + e + ")";
        }
    }

    private static List<Candidate> loadPlugin(Path entry, List<Path> jars, ModuleLayer parent) {
        String where = "plugin directory " + entry + ": ";
        List<Candidate> found = new ArrayList<>();
        ClassLoader parentLoader = PluginDirectory.class.getClassLoader();
        // A jar that cannot be read is damaged, however it is loaded: a URLClassLoader skips it without a word (the plugin
        // would look like one without META-INF/services, its user sent to add a declaration it may well have), and a module
        // finder's refusal would be met with the remedy for a missing dependency.
        for (Path jar : jars) {
            if (isDanglingLink(jar)) {
                found.add(Candidate.broken(entry.getFileName().toString(), where.substring(0, where.length() - 2),
                        "cannot read " + jar + ": it is a symbolic link to " + target(jar) + ", which does not exist: point it at the "
                                + "plugin's jar, or remove it"));
                return found;
            }
            try (ZipFile readable = new ZipFile(jar.toFile())) {
                readable.size();
            } catch (IOException e) {
                // A jar this user may not read is no damaged one: until 2026-12-07 it was sent to put an intact copy in its place.
                found.add(Candidate.broken(entry.getFileName().toString(), where.substring(0, where.length() - 2),
                        "cannot read " + jar + ": " + (permissionDenied(e)
                                ? "EACCES (" + ServiceDiscovery.describe(e) + "): make it readable for this user ("
                                + System.getProperty("user.name") + "), or run Conduit as a user who may read it"
                                : ServiceDiscovery.describe(e) + ". The jar is damaged (truncated or altered in a copy, say): put an "
                                + "intact copy in its place")));
                return found;
            }
        }
        try {
            if (parent != null) {
                ModuleFinder finder = withoutConduitModules(ModuleFinder.of(jars.toArray(Path[]::new)), parent);
                Set<String> roots = finder.findAll().stream().map(ModuleReference::descriptor)
                        .map(d -> d.name()).collect(Collectors.toSet());
                Configuration configuration = parent.configuration().resolve(finder, ModuleFinder.of(), roots);
                ModuleLayer layer = parent.defineModulesWithOneLoader(configuration, parentLoader);
                ServiceDiscovery.collect(ServiceLoader.load(layer, ConduitPlugin.class), new HashSet<>(), found, where,
                        type -> type.getModule().getLayer() == layer);
            } else {
                URL[] urls = new URL[jars.size()];
                for (int i = 0; i < urls.length; i++) urls[i] = jars.get(i).toUri().toURL();
                URLClassLoader loader = new URLClassLoader("conduit-plugin-" + entry.getFileName(), urls, parentLoader);
                try {
                    ServiceDiscovery.collect(ServiceLoader.load(ConduitPlugin.class, loader), new HashSet<>(), found, where,
                            type -> type.getClassLoader() == loader);
                } finally {
                    if (found.stream().allMatch(c -> c.plugin() == null)) closeUnused(loader, entry);
                }
            }
        } catch (RuntimeException | MalformedURLException | LinkageError e) {
            // FindException, ResolutionException, LayerInstantiationException: a bad plugin, not a bad runtime.
            found.add(Candidate.broken(entry.getFileName().toString(), where.substring(0, where.length() - 2),
                    "cannot load plugin from " + entry + ": " + ServiceDiscovery.describe(e)
                            + ". Each plugin needs all its dependencies beside it, except Conduit's own modules."));
            return found;
        }
        if (found.isEmpty()) {
            // Which declaration counts depends on how this runtime loads the jar, and a jar may well hold the other one.
            String needs = parent != null
                    ? "a jar with a module descriptor needs 'provides dev.conduit.spi.ConduitPlugin with <class>;' in it (its "
                    + "META-INF/services file is not read for a module), one without needs META-INF/services/dev.conduit.spi.ConduitPlugin"
                    : "this runtime is on the class path, where a jar needs META-INF/services/dev.conduit.spi.ConduitPlugin naming its "
                    + "plugin class ('provides' in a module descriptor is not read there)";
            // A library at the top (a plugin's dependency put beside it, or a plugin.path set to an application's lib
            // directory) is the likelier slip there than a plugin without its declaration.
            found.add(Candidate.broken(entry.getFileName().toString(), where.substring(0, where.length() - 2),
                    "no Conduit plugin in " + entry + ": " + needs + ". The TCK's PluginMetadataContract checks both"
                            + (isJar(entry) ? ". If it is a library, not a plugin (a plugin's dependency, or a jar of Conduit's own), take "
                            + "it out of the top of the plugin directory, where every jar is a plugin on its own: a plugin and its "
                            + "dependencies go together in a sub-directory of their own" : "")));
        }
        return found;
    }
}
