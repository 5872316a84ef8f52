package dev.conduit.it;

import dev.conduit.Conduit;
import dev.conduit.PluginInfo;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.it.plugins.AlphaPlugin;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link java.util.ServiceLoader} finds the test plugins: through {@code provides} on the module
 * path, through {@code META-INF/services} on the class path.
 */
class ServiceLoaderDiscoveryTest {

    @Test
    void thisExecutionLoadsConduitTheWayItClaims() {
        boolean named = Conduit.class.getModule().isNamed();
        assertThat(named).isEqualTo(Loading.current() == Loading.MODULE_PATH);
        assertThat(AlphaPlugin.class.getModule().isNamed()).isEqualTo(named);
        if (named) {
            assertThat(Conduit.class.getModule().getName()).isEqualTo("dev.conduit");
            assertThat(AlphaPlugin.class.getModule().getName()).isEqualTo("dev.conduit.it");
        }
    }

    @Test
    void serviceLoaderFindsEachTestPluginOnceAndSaysWhereFrom() {
        Loading loading = Loading.current();
        try (Conduit conduit = Loading.isolatedBuilder().build()) {
            List<PluginInfo> ours = conduit.plugins().stream().filter(p -> p.name().startsWith("it-")).toList();
            assertThat(ours).extracting(PluginInfo::name).containsExactly("it-alpha", "it-beta");
            for (PluginInfo p : ours) {
                assertThat(p.status()).isEqualTo(PluginInfo.Status.SELECTED);
                assertThat(p.origin()).as(p.name()).startsWith(loading.originPrefix);
                if (loading == Loading.MODULE_PATH) {
                    assertThat(p.origin()).startsWith("module dev.conduit.it");
                    assertThat(p.details()).containsEntry("module", "dev.conduit.it");
                } else {
                    assertThat(p.details()).containsEntry("module", "null");
                }
            }
            assertThat(conduit.selectedPlugins()).containsSubsequence("it-alpha", "it-beta");
        }
    }

    @Test
    void serviceLoaderFindsTheRealPluginsTheSameWay() {
        Loading loading = Loading.current();
        try (Conduit conduit = Loading.isolatedBuilder().build()) {
            for (String name : List.of("memfd", "posix")) {
                PluginInfo p = conduit.plugins().stream().filter(i -> i.name().equals(name)).findFirst()
                        .orElseThrow(() -> new AssertionError("no plugin " + name + " in " + conduit.plugins()));
                assertThat(p.status()).as("%s: %s", name, p.reason()).isEqualTo(PluginInfo.Status.SELECTED);
                assertThat(p.origin()).as(name).startsWith(loading.originPrefix);
                if (loading == Loading.MODULE_PATH) {
                    assertThat(p.origin()).startsWith("module dev.conduit.plugin." + name + " ");
                }
            }
        }
    }

    @Test
    void discoveredPluginsServeAWorker() {
        try (Conduit conduit = Loading.isolatedBuilder().transports("it-beta").build();
             Worker worker = conduit.newWorker(ThreadMode.MULTI)) {
            assertThat(conduit.selectedPlugins()).containsExactly("it-beta");
            assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
            assertThat(worker.progress()).isZero();
        }
    }

    @Test
    void turningDiscoveryOffFindsNothing() {
        try (Conduit conduit = Loading.isolatedBuilder().discoverPlugins(false).build()) {
            assertThat(conduit.plugins()).isEmpty();
        }
    }
}
