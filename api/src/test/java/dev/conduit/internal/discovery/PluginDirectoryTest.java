package dev.conduit.internal.discovery;

import dev.conduit.spi.ConduitPlugin;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.module.ResolvedModule;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A plugin directory that bundles its own {@code dev.conduit.linux}: the bundled copy is hidden
 * when the layer the plugin layers extend has one, and used when it has none. The jars are
 * compiled by the test: a stand-in {@code dev.conduit.linux} (only its name matters to the
 * loader) whose {@code dev.conduit.linux.Copy.which()} says which copy it is, and a plugin that
 * requires it and reports {@code which()} as its description.
 *
 * <pre>
 * work/app/linux.jar                    the application's copy: which() = "application"
 * bundling/p/plugin.jar                 plugin "bundles-linux", requires dev.conduit.linux
 * bundling/p/conduit-linux.jar          the directory's copy: which() = "bundled"
 * </pre>
 */
class PluginDirectoryTest {

    private static final String LINUX = "dev.conduit.linux";
    private static final String COPY = "dev.conduit.linux.Copy";

    @TempDir
    static Path tmp;
    /** A plugin directory whose one plugin bundles its own {@code dev.conduit.linux}. */
    static Path bundling;
    /** The application's {@code dev.conduit.linux}, for a parent layer that has one. */
    static Path applicationLinux;

    @BeforeAll
    static void buildJars() throws IOException {
        Path work = tmp.resolve("work");
        bundling = tmp.resolve("bundling");
        applicationLinux = linuxStandIn(work, "application", work.resolve("app/linux.jar"));
        Path bundledLinux = linuxStandIn(work, "bundled", bundling.resolve("p/conduit-linux.jar"));
        compileJar(work.resolve("plugin"), bundling.resolve("p/plugin.jar"), List.of(bundledLinux), Map.of(
                "module-info.java", """
                        module bundleslinux {
                            requires dev.conduit.spi;
                            requires dev.conduit.linux;
                            provides dev.conduit.spi.ConduitPlugin with bundleslinux.Plugin;
                        }
                        """,
                "bundleslinux/Plugin.java", """
                        package bundleslinux;

                        import dev.conduit.spi.*;
                        import java.util.*;

                        public final class Plugin implements ConduitPlugin {
                            public String name() { return "bundles-linux"; }
                            public Version version() { return Version.parse("1.0.0"); }
                            public String spiVersion() { return SPI_VERSION; }
                            public String description() { return dev.conduit.linux.Copy.which(); }
                            public Availability probe(PluginContext context) { return Availability.available(); }
                            public Set<Capability> capabilities() { return Set.of(Capability.MEMORY); }
                            public Set<ThreadMode> threadModes() { return EnumSet.allOf(ThreadMode.class); }
                        }
                        """));
    }

    /** The plugin layers extend the boot layer here (module path); it must not have dev.conduit.linux for case (b). */
    private static ModuleLayer runtimeLayer() {
        ModuleLayer layer = PluginDirectory.class.getModule().getLayer();
        assertThat(layer).as("the runtime runs as a named module (surefire's module path)").isNotNull();
        return layer;
    }

    @Test
    void aBundledLinuxModuleIsHiddenWhenTheApplicationsLayerHasOne() {
        ModuleLayer runtime = runtimeLayer();
        Configuration withLinux = runtime.configuration().resolve(ModuleFinder.of(applicationLinux), ModuleFinder.of(), Set.of(LINUX));
        ModuleLayer application = runtime.defineModulesWithOneLoader(withLinux, ClassLoader.getSystemClassLoader());

        List<Candidate> found = PluginDirectory.load(bundling, application, "the builder");

        assertThat(found).singleElement().satisfies(c -> assertThat(c.error()).as("error").isNull());
        ConduitPlugin plugin = found.getFirst().plugin();
        assertThat(plugin.name()).isEqualTo("bundles-linux");
        assertThat(plugin.description()).as("the copy the plugin calls").isEqualTo("application");
        assertThat(seenBy(plugin)).isSameAs(loadCopy(application.findLoader(LINUX)));
        assertThat(resolvedIn(plugin)).as("modules resolved in the plugin's layer").doesNotContain(LINUX).contains("bundleslinux");
    }

    @Test
    void aBundledLinuxModuleIsUsedWhenTheApplicationsLayerHasNone() {
        ModuleLayer runtime = runtimeLayer();
        assertThat(runtime.findModule(LINUX)).as("dev.conduit.linux in the api tests' boot layer").isEmpty();

        List<Candidate> found = PluginDirectory.load(bundling, "the builder");

        assertThat(found).singleElement().satisfies(c -> assertThat(c.error()).as("error").isNull());
        ConduitPlugin plugin = found.getFirst().plugin();
        assertThat(plugin.name()).isEqualTo("bundles-linux");
        assertThat(plugin.description()).as("the copy the plugin calls").isEqualTo("bundled");
        assertThat(seenBy(plugin).getModule().getLayer()).as("layer of the Copy class the plugin sees")
                .isSameAs(plugin.getClass().getModule().getLayer());
        assertThat(resolvedIn(plugin)).as("modules resolved in the plugin's layer").contains(LINUX, "bundleslinux");
    }

    /**
     * A damaged jar (truncated in a copy) is named as damaged wherever the runtime runs. On the class
     * path the plugin's class loader skipped the unreadable jar in silence, and it was reported as
     * a jar without META-INF/services, with the remedy of adding a declaration it may well have; on
     * the module path it was "cannot load plugin from ...: Error reading ...; caused by ZipException:
     * zip END header not found. Each plugin needs all its dependencies beside it", the remedy for a
     * missing dependency. Both now say the jar is damaged and to put an intact copy in its place.
     */
    @Test
    void aDamagedJarIsReportedAsDamagedAlsoOnTheClassPath() throws IOException {
        Path dir = tmp.resolve("damaged");
        Files.createDirectories(dir);
        Files.write(dir.resolve("plugin.jar"), new byte[] {'P', 'K', 3, 4, 1, 2, 3});
        for (List<Candidate> found : List.of(PluginDirectory.load(dir, null, "the builder"), PluginDirectory.load(dir, runtimeLayer(), "the builder"))) {
            assertThat(found).singleElement().satisfies(c -> {
                assertThat(c.plugin()).isNull();
                assertThat(c.error()).startsWith("cannot read " + dir.resolve("plugin.jar") + ": ").contains("zip END header not found")
                        .endsWith(". The jar is damaged (truncated or altered in a copy, say): put an intact copy in its place")
                        .doesNotContain("META-INF/services").doesNotContain("dependencies");
            });
        }
    }

    /**
     * A jar that is a symbolic link to a file no longer there (a plugin's jar linked from where a
     * package manager put it, then upgraded away) is reported, at the top of the directory and in
     * a plugin's sub-directory, naming the link, where it points and what to do: until 2026-12-07
     * it was skipped in silence (a sub-directory of it alone was no plugin at all, one with other
     * jars was loaded without it), and a user who named the plugin in transports was told only
     * that it was not found.
     */
    @Test
    void aJarThatIsASymbolicLinkToAMissingFileIsReportedNamingTheLinkAndWhereItPoints() throws IOException {
        Path dir = tmp.resolve("dangling");
        Files.createDirectories(dir.resolve("p"));
        Path gone = tmp.resolve("upgraded-away/verbs-1.2.jar");
        Files.createSymbolicLink(dir.resolve("verbs.jar"), gone);
        Files.createSymbolicLink(dir.resolve("p/plugin.jar"), gone);
        for (List<Candidate> found : List.of(PluginDirectory.load(dir, null, "the builder"), PluginDirectory.load(dir, runtimeLayer(), "the builder"))) {
            assertThat(found).hasSize(2).allSatisfy(c -> assertThat(c.plugin()).isNull());
            for (Path link : List.of(dir.resolve("p/plugin.jar"), dir.resolve("verbs.jar"))) {
                assertThat(found).filteredOn(c -> c.error().startsWith("cannot read " + link + ": "))
                        .singleElement().satisfies(c -> assertThat(c.error()).contains("it is a symbolic link to " + gone
                                + ", which does not exist: point it at the plugin's jar, or remove it").doesNotContain("damaged"));
            }
        }
    }

    /**
     * A library at the top of a plugin directory (a plugin's dependency put beside it, or plugin.path set to an
     * application's lib directory) was told only how a plugin declares itself; it is now told where a library goes.
     */
    @Test
    void aLibraryAtTheTopOfAPluginDirectoryIsToldWhereLibrariesGo() throws IOException {
        Path dir = tmp.resolve("library-at-top");
        Files.createDirectories(dir.resolve("p"));
        for (Path jar : List.of(dir.resolve("somelib-1.0.jar"), dir.resolve("p/otherlib-1.0.jar"))) {
            try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
                out.putNextEntry(new JarEntry("somelib/readme.txt"));
                out.write('x');
            }
        }
        for (List<Candidate> found : List.of(PluginDirectory.load(dir, null, "the builder"), PluginDirectory.load(dir, runtimeLayer(), "the builder"))) {
            assertThat(found).hasSize(2);
            assertThat(found).filteredOn(c -> c.error().startsWith("no Conduit plugin in " + dir.resolve("somelib-1.0.jar") + ": "))
                    .singleElement().satisfies(c -> assertThat(c.error()).endsWith(". The TCK's PluginMetadataContract checks both. "
                            + "If it is a library, not a plugin (a plugin's dependency, or a jar of Conduit's own), take it out of the top "
                            + "of the plugin directory, where every jar is a plugin on its own: a plugin and its dependencies go "
                            + "together in a sub-directory of their own"));
            assertThat(found).as("a sub-directory is a plugin with its dependencies: no such advice")
                    .filteredOn(c -> c.error().startsWith("no Conduit plugin in " + dir.resolve("p") + ": "))
                    .singleElement().satisfies(c -> assertThat(c.error()).endsWith(". The TCK's PluginMetadataContract checks both"));
        }
    }

    /**
     * On the class path each plugin gets a URLClassLoader, which opens its jars to look for
     * META-INF/services; one that holds no plugin is reported broken and its loader dropped, so it
     * must leave nothing open: each build of a Conduit loads plugin.path again. Until 2026-12-07 the
     * loader was left to a garbage collection, and the jar stayed open meanwhile.
     */
    @Test
    void aJarThatHoldsNoPluginIsLeftClosedOnTheClassPath() throws IOException {
        Path dir = tmp.resolve("no-plugin-closed");
        Files.createDirectories(dir);
        Path jar = dir.resolve("somelib-1.0.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
            out.putNextEntry(new JarEntry("somelib/readme.txt"));
            out.write('x');
        }
        assertThat(PluginDirectory.load(dir, null, "the builder")).singleElement()
                .satisfies(c -> assertThat(c.error()).startsWith("no Conduit plugin in " + jar));
        assertThat(descriptorsOpenOn(jar)).as("descriptors of this process open on " + jar).isZero();
    }

    private static long descriptorsOpenOn(Path file) throws IOException {
        Path real = file.toRealPath();
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).equals(real);
                } catch (IOException e) {
                    return false; // the descriptor of the listing itself, closed meanwhile
                }
            }).count();
        }
    }

    /** The {@code dev.conduit.linux.Copy} class as the plugin's code resolves it. */
    private static Class<?> seenBy(ConduitPlugin plugin) {
        return loadCopy(plugin.getClass().getClassLoader());
    }

    private static Class<?> loadCopy(ClassLoader loader) {
        try {
            return Class.forName(COPY, false, loader);
        } catch (ClassNotFoundException e) {
            throw new AssertionError(e);
        }
    }

    private static List<String> resolvedIn(ConduitPlugin plugin) {
        return plugin.getClass().getModule().getLayer().configuration().modules().stream().map(ResolvedModule::name).sorted().toList();
    }

    /** A module {@code dev.conduit.linux} whose {@code Copy.which()} returns {@code which}. */
    private static Path linuxStandIn(Path work, String which, Path jar) throws IOException {
        return compileJar(work.resolve("linux-" + which), jar, List.of(), Map.of(
                "module-info.java", "module dev.conduit.linux { requires transitive dev.conduit.spi; exports dev.conduit.linux; }",
                "dev/conduit/linux/Copy.java", """
                        package dev.conduit.linux;
                        public final class Copy {
                            private Copy() {}
                            public static String which() { return "%s"; }
                        }
                        """.formatted(which)));
    }

    /** Where {@code dev.conduit.spi} was loaded from (a jar, or a classes directory). */
    private static Path spiLocation() {
        try {
            return Path.of(ConduitPlugin.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Compiles {@code sources} against the SPI and {@code modulePath} into {@code jar}, with the
     * {@code javac} tool ({@link java.util.spi.ToolProvider}: the runtime module does not read
     * {@code java.compiler}).
     */
    private static Path compileJar(Path work, Path jar, List<Path> modulePath, Map<String, String> sources) throws IOException {
        Path src = work.resolve("src");
        Path classes = work.resolve("classes");
        List<String> args = new ArrayList<>();
        List<Path> mp = new ArrayList<>(modulePath);
        mp.add(spiLocation());
        args.addAll(List.of("--release", "25", "-d", classes.toString(),
                "--module-path", String.join(java.io.File.pathSeparator, mp.stream().map(Path::toString).toList())));
        for (var e : sources.entrySet()) {
            Path f = src.resolve(e.getKey());
            Files.createDirectories(f.getParent());
            Files.writeString(f, e.getValue());
            args.add(f.toString());
        }
        Files.createDirectories(classes);
        ToolProvider javac = ToolProvider.findFirst("javac")
                .orElseThrow(() -> new IllegalStateException("no javac tool: run the tests on a JDK"));
        StringWriter out = new StringWriter();
        try (PrintWriter w = new PrintWriter(out)) {
            int rc = javac.run(w, w, args.toArray(String[]::new));
            w.flush();
            if (rc != 0) throw new IllegalStateException("compiling " + work + " failed (" + rc + "): " + out);
        }

        Files.createDirectories(jar.getParent());
        try (OutputStream o = Files.newOutputStream(jar); JarOutputStream j = new JarOutputStream(o);
             Stream<Path> walk = Files.walk(classes)) {
            for (Path p : walk.filter(Files::isRegularFile).sorted().toList()) {
                j.putNextEntry(new JarEntry(classes.relativize(p).toString().replace('\\', '/')));
                Files.copy(p, j);
                j.closeEntry();
            }
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        return jar;
    }
}
