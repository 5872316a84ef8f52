package dev.conduit.internal.install;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A plugin not found is remedied differently in a run-time image made by jlink, which finds only
 * the plugins linked into it (integration-tests' {@code RuntimeImageTest} runs one).
 */
class RuntimeImageRemedyTest {

    @Test
    void aModuleOfTheRunTimeImageIsLinkedIntoItAndAModuleOfTheModulePathOrClassPathIsNot() {
        // java.base always comes from the image (jrt:/java.base); this test's own classes never do.
        assertThat(PluginInstall.linkedIntoImage(String.class.getModule())).isTrue();
        assertThat(PluginInstall.linkedIntoImage(RuntimeImageRemedyTest.class.getModule())).isFalse();
        assertThat(PluginInstall.linkedIntoImage()).isFalse();
    }

    @Test
    void inARunTimeImageThePluginIsToBeLinkedIn() {
        assertThat(PluginInstall.howToInstall("it", true))
                .startsWith("link it into this run-time image (jlink --add-modules with the plugin's module")
                .endsWith("the image's java also finds plugins on a module path (java -p) and in plugin.path (CONDUIT_PLUGIN_PATH)");
        assertThat(PluginInstall.howToInstall("it", false))
                .isEqualTo("put it on the module path or the class path, or into plugin.path (CONDUIT_PLUGIN_PATH)");
    }

    /** jlink's --add-modules takes modules, not the artifacts a build names. */
    @Test
    void withNoPluginAtAllAnImageNamesConduitsPluginsByModuleAndElsewhereByArtifact() {
        assertThat(PluginInstall.howToInstallOne(true))
                .startsWith("link one (dev.conduit.plugin.memfd, dev.conduit.plugin.posix) into this run-time image (jlink --add-modules");
        assertThat(PluginInstall.howToInstallOne(false)).isEqualTo("put one (conduit-plugin-memfd, conduit-plugin-posix) on the module "
                + "path or the class path, or into plugin.path (CONDUIT_PLUGIN_PATH)");
    }
}
