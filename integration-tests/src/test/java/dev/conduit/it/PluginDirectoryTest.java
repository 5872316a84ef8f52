package dev.conduit.it;

import dev.conduit.Conduit;
import dev.conduit.ConfigEntry;
import dev.conduit.PluginInfo;
import dev.conduit.PluginInfo.Status;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Plugins loaded from a plugin directory ({@code plugin.path}), each with its own dependencies:
 * {@code dir-a} bundles {@code testlib} 1 and {@code dir-b} bundles {@code testlib} 2. On the module
 * path each plugin gets a child {@link ModuleLayer}; on the class path its own class loader. The
 * jars are compiled by the test, once per JVM.
 *
 * <pre>
 * plugins/a/plugin-a.jar  plugins/a/testlib-1.jar     dir-a
 * plugins/b/plugin-b.jar  plugins/b/testlib-2.jar     dir-b
 * plugins/solo.jar                                    dir-solo (a jar at the top is a plugin on its own)
 * plugins/README.txt, plugins/empty/                  ignored
 * incomplete/c/plugin-c.jar                           dir-c, whose testlib is missing
 * incomplete/libonly/testlib-1.jar                    a directory without a plugin
 * </pre>
 */
class PluginDirectoryTest {

    @TempDir
    static Path tmp;
    static Path plugins;
    static Path incomplete;

    @BeforeAll
    static void buildPluginJars() throws IOException {
        Path work = tmp.resolve("work");
        plugins = tmp.resolve("plugins");
        incomplete = tmp.resolve("incomplete");
        Path lib1 = PluginJars.testlib(work, "1", plugins.resolve("a/testlib-1.jar"));
        Path lib2 = PluginJars.testlib(work, "2", plugins.resolve("b/testlib-2.jar"));
        PluginJars.pluginUsingTestlib(work, "plugina", "dir-a", lib1, plugins.resolve("a/plugin-a.jar"));
        PluginJars.pluginUsingTestlib(work, "pluginb", "dir-b", lib2, plugins.resolve("b/plugin-b.jar"));
        PluginJars.standalonePlugin(work, "pluginsolo", "dir-solo", plugins.resolve("solo.jar"));
        PluginJars.pluginUsingTestlib(work, "pluginc", "dir-c", lib1, incomplete.resolve("c/plugin-c.jar"));
        Files.createDirectories(incomplete.resolve("libonly"));
        Files.copy(lib1, incomplete.resolve("libonly/testlib-1.jar"));
        Files.createDirectories(incomplete.resolve("toodeep/lib"));
        Files.copy(lib1, incomplete.resolve("toodeep/lib/testlib-1.jar"));
        Files.writeString(plugins.resolve("README.txt"), "not a jar: ignored");
        Files.createDirectories(plugins.resolve("empty"));
    }

    private static PluginInfo info(Conduit conduit, String name) {
        List<PluginInfo> matches = conduit.plugins().stream().filter(p -> p.name().equals(name)).toList();
        assertThat(matches).as("plugins called %s in %s", name, conduit.plugins()).hasSize(1);
        return matches.getFirst();
    }

    @Test
    void twoPluginsBundlingConflictingVersionsOfOneLibraryEachSeeTheirOwn() {
        Loading loading = Loading.current();
        try (Conduit conduit = Loading.isolatedBuilder().pluginPath(plugins).build()) {
            PluginInfo a = info(conduit, "dir-a");
            PluginInfo b = info(conduit, "dir-b");
            assertThat(a.status()).isEqualTo(Status.SELECTED);
            assertThat(b.status()).isEqualTo(Status.SELECTED);
            assertThat(a.details()).containsEntry("testlib", "1");
            assertThat(b.details()).containsEntry("testlib", "2");
            assertThat(a.description()).isEqualTo("dir-a using testlib 1");
            assertThat(b.description()).isEqualTo("dir-b using testlib 2");
            assertThat(a.details().get("loader")).as("each plugin has its own loader").isNotEqualTo(b.details().get("loader"));
            assertThat(conduit.plugins()).as("files that are not jars and empty directories are ignored")
                    .extracting(PluginInfo::status).doesNotContain(Status.BROKEN);

            assertThat(a.origin()).startsWith("plugin directory " + plugins.resolve("a") + ": " + loading.originPrefix);
            assertThat(b.origin()).startsWith("plugin directory " + plugins.resolve("b") + ": " + loading.originPrefix);
            if (loading == Loading.MODULE_PATH) {
                assertThat(a.origin()).contains("module plugina").contains("plugin-a.jar");
                assertThat(b.origin()).contains("module pluginb").contains("plugin-b.jar");
            } else {
                assertThat(a.origin()).contains("class path").contains("plugin-a.jar");
            }
        }
    }

    @Test
    void aJarAtTheTopOfThePluginDirectoryIsAPluginOnItsOwn() {
        try (Conduit conduit = Loading.isolatedBuilder().pluginPath(plugins).build()) {
            PluginInfo solo = info(conduit, "dir-solo");
            assertThat(solo.status()).isEqualTo(Status.SELECTED);
            assertThat(solo.origin()).startsWith("plugin directory " + plugins.resolve("solo.jar") + ": ");
        }
    }

    @Test
    void pluginsFromADirectoryAndFromServiceLoaderAreUsedTogether() {
        try (Conduit conduit = Loading.isolatedBuilder().pluginPath(plugins).transports("dir-b", "it-alpha", "dir-a").build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("dir-b", "it-alpha", "dir-a");
        }
    }

    @Test
    void aPluginMissingItsDependencyIsBrokenAndTheOthersAreUnaffected() {
        try (Conduit conduit = Loading.isolatedBuilder().pluginPath(plugins, incomplete).build()) {
            Path c = incomplete.resolve("c");
            List<PluginInfo> fromC = conduit.plugins().stream().filter(p -> p.origin().contains(c.toString())).toList();
            assertThat(fromC).as("entries from %s in %s", c, conduit.plugins()).singleElement().satisfies(p -> {
                assertThat(p.status()).isEqualTo(Status.BROKEN);
                assertThat(p.reason()).contains("testlib");
            });
            if (Loading.current() == Loading.MODULE_PATH) {
                assertThat(fromC.getFirst().reason()).contains("cannot load plugin from " + c).contains("Module testlib not found");
            }
            PluginInfo libOnly = info(conduit, "libonly");
            assertThat(libOnly.status()).isEqualTo(Status.BROKEN);
            assertThat(libOnly.reason()).contains("no Conduit plugin in " + incomplete.resolve("libonly"))
                    .contains(Loading.current() == Loading.MODULE_PATH ? "needs 'provides dev.conduit.spi.ConduitPlugin with <class>;'"
                            : "this runtime is on the class path, where a jar needs META-INF/services/dev.conduit.spi.ConduitPlugin")
                    .contains("The TCK's PluginMetadataContract checks both");
            // Unpacked one level too deep: it used to be ignored without a word, as an empty directory is.
            PluginInfo tooDeep = info(conduit, "toodeep");
            assertThat(tooDeep.status()).isEqualTo(Status.BROKEN);
            assertThat(tooDeep.reason()).contains("no jar at the top of " + incomplete.resolve("toodeep"))
                    .contains("lib/testlib-1.jar");
            assertThat(info(conduit, "dir-a").status()).isEqualTo(Status.SELECTED);
            assertThat(info(conduit, "dir-b").status()).isEqualTo(Status.SELECTED);
            assertThat(info(conduit, "it-alpha").status()).isEqualTo(Status.SELECTED);
        }
    }

    @Test
    void aPluginThatBundlesConduitsOwnSpiUsesTheRuntimesCopy() throws IOException {
        Path bundling = tmp.resolve("bundling");
        PluginJars.standalonePlugin(tmp.resolve("work"), "pluginbundle", "dir-bundle", bundling.resolve("d/plugin-d.jar"));
        Files.copy(PluginJars.spiLocation(), bundling.resolve("d/conduit-spi.jar"));
        try (Conduit conduit = Loading.isolatedBuilder().pluginPath(bundling).build()) {
            assertThat(info(conduit, "dir-bundle").status()).isEqualTo(Status.SELECTED);
            assertThat(conduit.plugins()).extracting(PluginInfo::status).doesNotContain(Status.BROKEN);
        }
    }

    @Test
    void aPluginDirectoryThatDoesNotExistIsReportedAsBroken() {
        Path missing = tmp.resolve("no-such-directory");
        try (Conduit conduit = Loading.isolatedBuilder().pluginPath(missing, plugins).build()) {
            PluginInfo broken = info(conduit, missing.toString());
            assertThat(broken.status()).isEqualTo(Status.BROKEN);
            assertThat(broken.reason()).contains(missing.toString()).contains("does not exist").contains("fix plugin.path (from the builder)");
            assertThat(info(conduit, "dir-a").status()).isEqualTo(Status.SELECTED);
        }
    }

    /**
     * A directory that plugin.path names twice, as written, with a trailing '/', or through a symbolic link to it, was
     * loaded once per naming: each of its plugins was listed again, SHADOWED by itself. It is now loaded once.
     */
    @Test
    void aDirectoryThePluginPathNamesTwiceIsLoadedOnce() throws IOException {
        Path link = Files.createSymbolicLink(tmp.resolve("plugins-link"), plugins);
        String twice = String.join(java.io.File.pathSeparator, plugins.toString(), plugins + "/", link.toString(),
                plugins.resolve("a/..").toString());
        try (Conduit conduit = Loading.isolatedBuilder().set("plugin.path", twice).build()) {
            assertThat(conduit.plugins()).filteredOn(p -> p.name().startsWith("dir-")).extracting(PluginInfo::name)
                    .containsExactlyInAnyOrder("dir-a", "dir-b", "dir-solo");
            assertThat(info(conduit, "dir-a").origin()).startsWith("plugin directory " + plugins.resolve("a") + ": ");
        } finally {
            Files.delete(link);
        }
    }

    @Test
    void thePluginPathIsReadFromTheEnvironment() {
        try (Conduit conduit = Conduit.builder().environment(Map.of("CONDUIT_PLUGIN_PATH", plugins.toString()))
                .systemProperties(new Properties()).build()) {
            assertThat(info(conduit, "dir-a").status()).isEqualTo(Status.SELECTED);
            assertThat(conduit.configuration()).filteredOn(e -> e.key().equals("plugin.path"))
                    .singleElement().satisfies(e -> {
                        assertThat(e.value()).isEqualTo(plugins.toString());
                        assertThat(e.source()).isEqualTo(ConfigEntry.Source.ENVIRONMENT);
                    });
        }
    }

    /**
     * ConduitBuilder.classLoader: "The class loader whose class path is searched for plugins
     * (default: the thread's context loader)". A plugin jar on a loader of its own is found through
     * that loader, given to the builder or made the thread's context loader, and not otherwise.
     */
    @Test
    void theClassLoaderGivenToTheBuilderOrTheContextLoaderIsSearchedForPlugins() throws IOException {
        try (URLClassLoader loader = new URLClassLoader("solo-jar", new URL[] {plugins.resolve("solo.jar").toUri().toURL()},
                PluginDirectoryTest.class.getClassLoader())) {
            try (Conduit conduit = Loading.isolatedBuilder().classLoader(loader).build()) {
                assertThat(info(conduit, "dir-solo").status()).isEqualTo(Status.SELECTED);
            }
            try (Conduit conduit = Loading.isolatedBuilder().build()) {
                assertThat(conduit.plugins()).extracting(PluginInfo::name).doesNotContain("dir-solo");
            }
            Thread thread = Thread.currentThread();
            ClassLoader context = thread.getContextClassLoader();
            thread.setContextClassLoader(loader);
            try (Conduit conduit = Loading.isolatedBuilder().build()) {
                assertThat(info(conduit, "dir-solo").status()).isEqualTo(Status.SELECTED);
            } finally {
                thread.setContextClassLoader(context);
            }
        }
    }
}
