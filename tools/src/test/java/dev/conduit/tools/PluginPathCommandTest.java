package dev.conduit.tools;

import dev.conduit.tools.ConduitProcess.Output;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.jar.JarOutputStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code conduit info} of a plugin.path whose jars or directories this user may not read: the tests run as root, for whom
 * modes do not bind, so {@code conduit} runs without the capabilities that override them ({@link ConduitProcess}).
 */
class PluginPathCommandTest {

    /** Who the messages name: {@code conduit} runs as this JVM's user, without the capabilities. */
    private static final String USER = System.getProperty("user.name");

    @TempDir
    Path tmp;

    /**
     * An intact jar that this user may not read was told "The jar is damaged (truncated or altered in a copy, say): put an
     * intact copy in its place", a copy that would not have helped: it is now told EACCES and to make it readable.
     */
    @Test
    void aPluginJarThisUserMayNotReadIsToldToMakeItReadableNotThatItIsDamaged() throws Exception {
        Path plugins = Files.createDirectory(tmp.resolve("plugins"));
        Path jar = plugins.resolve("acme.jar");
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream intact = new JarOutputStream(out)) {
            intact.setComment("an intact jar that holds nothing");
        }
        Files.setPosixFilePermissions(jar, Set.of());

        Output result = ConduitProcess.runThrough(ConduitProcess.WITHOUT_DAC_OVERRIDE, "info", "--set", "plugin.path=" + plugins);

        String unwrapped = unwrapped(result);
        assertThat(unwrapped).contains("cannot read " + jar + ": EACCES (", "Permission denied",
                "make it readable for this user (" + USER + "), or run Conduit as a user who may read it").doesNotContain("damaged");
    }

    /**
     * A plugin directory that this user may not list was "cannot list plugin directory /p:
     * java.nio.file.AccessDeniedException: /p", neither the cause in words nor a remedy, nor where plugin.path was set.
     */
    @Test
    void aPluginDirectoryThisUserMayNotListNamesEaccesTheRemedyAndWherePluginPathWasSet() throws Exception {
        Path plugins = Files.createDirectory(tmp.resolve("plugins"));
        Files.setPosixFilePermissions(plugins, Set.of());

        Output result = ConduitProcess.runThrough(ConduitProcess.WITHOUT_DAC_OVERRIDE, "info", "--set", "plugin.path=" + plugins);

        assertThat(unwrapped(result)).contains("cannot list plugin directory " + plugins + ": EACCES (" + plugins + "): make it "
                + "readable and searchable for this user (" + USER + ", chmod u+rx or its group's or others' bits), or fix plugin.path (from ")
                .doesNotContain("java.nio.file.AccessDeniedException");
    }

    /** A plugin's sub-directory this user may not list is told the same cause and remedy, or to take it out. */
    @Test
    void aPluginsSubDirectoryThisUserMayNotListNamesEaccesAndTheRemedy() throws Exception {
        Path plugins = Files.createDirectory(tmp.resolve("plugins"));
        Path plugin = Files.createDirectory(plugins.resolve("acme"));
        Files.createFile(plugin.resolve("acme.jar"));
        Files.setPosixFilePermissions(plugin, Set.of());

        Output result = ConduitProcess.runThrough(ConduitProcess.WITHOUT_DAC_OVERRIDE, "info", "--set", "plugin.path=" + plugins);

        assertThat(unwrapped(result)).contains("cannot list " + plugin + ": EACCES (" + plugin + "): make it readable and "
                + "searchable for this user (" + USER + ", chmod u+rx or its group's or others' bits), or take it out of the plugin directory")
                .doesNotContain("java.nio.file.AccessDeniedException");
    }

    /**
     * A plugin directory this user may read but not search (r--): its names list, but no entry can be looked at, so
     * every jar and sub-directory in it was taken for neither and skipped without a word, {@code conduit info} showing
     * no plugin and no reason. It is reported once, with EACCES, the remedy and the names it holds: until 2026-12-07
     * each entry was reported BROKEN on its own, a README as much as a plugin, each with the same cause and remedy.
     */
    @Test
    void aPluginDirectoryThisUserMayReadButNotSearchIsReportedOnceNamingItsEntries() throws Exception {
        Path plugins = Files.createDirectory(tmp.resolve("plugins"));
        Files.createFile(plugins.resolve("acme.jar"));
        Files.createDirectory(plugins.resolve("zeta"));
        Files.createFile(plugins.resolve("README"));
        Files.setPosixFilePermissions(plugins, java.nio.file.attribute.PosixFilePermissions.fromString("r--r--r--"));

        Output result = ConduitProcess.runThrough(ConduitProcess.WITHOUT_DAC_OVERRIDE, "info", "--set", "plugin.path=" + plugins);

        String unwrapped = unwrapped(result);
        assertThat(unwrapped).contains("cannot look at the entries of plugin directory " + plugins + " (3: README, acme.jar, zeta), "
                + "so none of them, jar or plugin's sub-directory, can be loaded: EACCES (plugin directory " + plugins + " lets this "
                + "user, " + USER + ", list it but not search it): make it searchable for this user (chmod u+x or its group's or "
                + "others' bits), or fix plugin.path (from ").doesNotContain("cannot look at " + plugins.resolve("README"));
        assertThat(unwrapped.split("PluginRegistry report", -1)).as("one WARNING, for the directory:%n%s", unwrapped).hasSize(2);
    }

    /** A plugin directory this user may search but not read (--x): its names cannot be listed, which is said as for no mode at all. */
    @Test
    void aPluginDirectoryThisUserMaySearchButNotReadNamesEaccesAndTheRemedy() throws Exception {
        Path plugins = Files.createDirectory(tmp.resolve("plugins"));
        Files.createFile(plugins.resolve("acme.jar"));
        Files.setPosixFilePermissions(plugins, java.nio.file.attribute.PosixFilePermissions.fromString("--x--x--x"));

        Output result = ConduitProcess.runThrough(ConduitProcess.WITHOUT_DAC_OVERRIDE, "info", "--set", "plugin.path=" + plugins);

        assertThat(unwrapped(result)).contains("cannot list plugin directory " + plugins + ": EACCES (" + plugins + "): make it "
                + "readable and searchable for this user (" + USER + ", chmod u+rx or its group's or others' bits)");
    }

    /** A plugin's sub-directory this user may read but not search: its jars were skipped without a word, as at the top. */
    @Test
    void aPluginsSubDirectoryThisUserMayReadButNotSearchReportsItsJars() throws Exception {
        Path plugins = Files.createDirectory(tmp.resolve("plugins"));
        Path plugin = Files.createDirectory(plugins.resolve("acme"));
        Path jar = Files.createFile(plugin.resolve("acme.jar"));
        Files.setPosixFilePermissions(plugin, java.nio.file.attribute.PosixFilePermissions.fromString("r--r--r--"));

        Output result = ConduitProcess.runThrough(ConduitProcess.WITHOUT_DAC_OVERRIDE, "info", "--set", "plugin.path=" + plugins);

        assertThat(unwrapped(result)).contains("cannot look at " + jar + ": EACCES (plugin directory " + plugin + " lets this user, "
                + USER + ", list it but not search it): make it searchable for this user (chmod u+x or its group's or others' bits), "
                + "or take it out of the plugin directory");
    }

    /**
     * A plugin directory under a directory that refuses this user a search was said not to exist, and its user sent to fix
     * a plugin.path that named it rightly: it is now told EACCES on its path and to make the path searchable.
     */
    @Test
    void aPluginDirectoryBehindADirectoryThisUserMayNotSearchIsNotSaidToBeMissing() throws Exception {
        Path closed = Files.createDirectory(tmp.resolve("closed"));
        Path plugins = Files.createDirectory(closed.resolve("plugins"));
        Files.setPosixFilePermissions(closed, Set.of());

        Output result = ConduitProcess.runThrough(ConduitProcess.WITHOUT_DAC_OVERRIDE, "info", "--set", "plugin.path=" + plugins);

        assertThat(unwrapped(result)).contains("cannot reach plugin directory " + plugins + ": EACCES (a directory on its path "
                + "does not let this user, " + USER + ", search it): make each directory on the path searchable for this user (chmod +x), "
                + "or fix plugin.path (from ").doesNotContain("does not exist");
    }

    /** The output with its wrapped lines joined, so that a reason reads as one line. */
    private static String unwrapped(Output result) throws IOException {
        return result.output().replaceAll("\n +", " ");
    }
}
