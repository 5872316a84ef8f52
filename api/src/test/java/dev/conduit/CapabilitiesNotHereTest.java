package dev.conduit;

import dev.conduit.PluginInfo.Status;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.internal.ipc.InProcessMemoryPlugin;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;

import static dev.conduit.testing.TestConduits.info;
import static dev.conduit.testing.TestConduits.isolated;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A probe that rules declared capabilities out here ({@code Availability.without}), as memfd does
 * on a shared directory it cannot write: the plugin stays selected for what it can do, and the
 * runtime never asks it for the rest, saying why wherever that matters.
 */
class CapabilitiesNotHereTest {

    private static final String WHY = "the directory is read-only: mount it read-write";

    /** Declares a transport and memory, and imports; its probe rules the transport and memory out. */
    private static TestPlugin importOnly() {
        return TestPlugin.named("importonly").priority(2).threadModes(ThreadMode.SINGLE)
                .capabilities(Capability.AM, Capability.MEMORY, Capability.IPC)
                .probe(c -> Availability.available().without(Capability.AM, WHY).without(Capability.MEMORY, WHY));
    }

    @Test
    void theInfoOfThePluginNamesWhatIsRuledOutHereAndWhy() {
        try (Conduit conduit = isolated().addPlugin(importOnly()).build()) {
            PluginInfo info = info(conduit, "importonly");
            assertThat(info.status()).isEqualTo(Status.SELECTED);
            assertThat(info.capabilities()).containsExactlyInAnyOrder(Capability.AM, Capability.MEMORY, Capability.IPC);
            assertThat(info.unsupportedHere()).containsOnlyKeys(Capability.AM, Capability.MEMORY).containsValue(WHY);
        }
    }

    @Test
    void aCapabilityThePluginDoesNotDeclareIsNotRuledOutEither() {
        try (Conduit conduit = isolated().addPlugin(TestPlugin.named("plain")
                .probe(c -> Availability.available().without(Capability.ATOMICS, "no atomics here"))).build()) {
            assertThat(info(conduit, "plain").unsupportedHere()).isEmpty();
        }
    }

    /**
     * The worker opens without the ruled-out transport, and its guard is chosen from the transports it
     * opens: a SINGLE-only plugin left out does not make a MULTI worker need a lock or confinement.
     */
    @Test
    void aWorkerOpensOverTheOtherTransportsAndIsGuardedForThemAlone() {
        TestPlugin importOnly = importOnly();
        TestPlugin other = TestPlugin.named("other").priority(1);
        try (Conduit conduit = isolated().addPlugin(importOnly).addPlugin(other).build()) {
            assertThat(conduit.selectedPlugins()).containsExactly("importonly", "other");
            assertThat(conduit.threadPolicy(ThreadMode.MULTI)).isEqualTo(ThreadPolicy.PASS_THROUGH);
            try (Worker worker = conduit.newWorker(ThreadMode.MULTI)) {
                assertThat(worker.address().transports()).containsExactly("other");
                assertThat(worker.threadPolicy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
            }
            assertThat(importOnly.opened).as("transports asked of the plugin that ruled them out").isEmpty();
            assertThat(other.opened).hasSize(1);
        }
    }

    @Test
    void aWorkerWithNoTransportLeftFailsNamingWhy() {
        try (Conduit conduit = isolated().addPlugin(importOnly()).build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("no selected plugin provides a transport (capability AM) here; selected: [importonly]")
                    .hasMessageContaining("importonly offers none here: " + WHY);
        }
    }

    /**
     * The plugins not in use are named with their reasons too: the application may not have
     * {@code conduit info}, whose JVM may see other plugins and options anyway. It used to say only
     * "selected: []" and send the user to the tool.
     */
    @Test
    void aWorkerOrPoolWithNoPluginLeftNamesWhyEachOtherPluginIsNotInUse() {
        String reason = "the JVM denies native access to module dev.conduit.linux: start it with --enable-native-access=dev.conduit.linux";
        try (Conduit conduit = isolated().addPlugin(TestPlugin.named("native").capabilities(Capability.AM, Capability.MEMORY)
                .probe(c -> Availability.unavailable(reason))).build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("no selected plugin provides a transport (capability AM) here; no plugin is selected; native is UNAVAILABLE: " + reason);
            assertThatThrownBy(conduit::pool).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("no selected plugin provides memory (capability MEMORY) here; no plugin is selected; native is UNAVAILABLE: " + reason);
        }
    }

    /**
     * A plugin that does not declare the capability is named last, without its reason: it would not
     * have offered it; the others come in the order an empty transports prefers (priority, then name). With a missing shared directory a worker's error began with devdax's advice to
     * set its devices (devdax sorts first), before memfd's and posix's real cause (helper h6).
     */
    @Test
    void aPluginThatWouldNotHaveOfferedTheCapabilityDoesNotLeadTheReasons() {
        String deviceWhy = "no device: set CONDUIT_DEVICE_DEVICES";
        String shmWhy = "the shared directory /nowhere does not exist: create it or set shared.dir";
        try (Conduit conduit = isolated()
                .addPlugin(TestPlugin.named("device").capabilities(Capability.MEMORY).probe(c -> Availability.unavailable(deviceWhy)))
                .addPlugin(TestPlugin.named("shm").priority(110).capabilities(Capability.AM, Capability.MEMORY)
                        .probe(c -> Availability.unavailable(shmWhy)))
                .build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("no plugin is selected; shm is UNAVAILABLE: " + shmWhy + "; device (UNAVAILABLE) would offer no AM anyway")
                    .hasMessageNotContaining(deviceWhy);
            assertThatThrownBy(conduit::pool).isInstanceOf(ConduitException.class)
                    .as("in the order an empty transports prefers: priority, then name")
                    .hasMessageContaining("no plugin is selected; shm is UNAVAILABLE: " + shmWhy + "; device is UNAVAILABLE: " + deviceWhy);
        }
    }

    /**
     * Conduit.pool(): over "the most preferred selected plugin that provides memory here (declares
     * MEMORY, and its probe did not rule it out)": importonly is preferred (priority 2) but ruled
     * memory out, so inproc; of two that provide it, the preferred one.
     */
    @Test
    void theDefaultPoolIsOverTheMostPreferredPluginThatProvidesMemoryHere() {
        try (Conduit conduit = isolated().addPlugin(importOnly()).addPlugin(new InProcessMemoryPlugin()).build();
             Pool pool = conduit.pool()) {
            assertThat(conduit.selectedPlugins()).startsWith("importonly");
            assertThat(pool.plugin()).isEqualTo("inproc");
        }
        for (String preferred : java.util.List.of("inproc", "other")) {
            String[] order = preferred.equals("inproc") ? new String[] {"inproc", "other"} : new String[] {"other", "inproc"};
            try (Conduit conduit = isolated().addPlugin(new InProcessMemoryPlugin())
                    .addPlugin(new InProcessMemoryPlugin("other", java.util.EnumSet.of(ThreadMode.SERIALIZED))).transports(order).build();
                 Pool pool = conduit.pool()) {
                assertThat(pool.plugin()).isEqualTo(preferred);
            }
        }
    }

    @Test
    void aWorkerWithNoPluginFoundAtAllSaysWhereToPutOne() {
        try (Conduit conduit = isolated().build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("no Conduit plugin was found: put one (conduit-plugin-memfd, conduit-plugin-posix) on the module path");
        }
    }

    @Test
    void aPoolOverThePluginIsRefusedNamingWhy() {
        try (Conduit conduit = isolated().addPlugin(importOnly()).build()) {
            assertThatThrownBy(() -> conduit.pool("importonly")).isInstanceOf(NotSupportedException.class)
                    .hasMessage("plugin 'importonly' provides no memory (capability MEMORY) here: " + WHY + "; plugins that do here: []");
            assertThatThrownBy(conduit::pool).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("no selected plugin provides memory (capability MEMORY) here")
                    .hasMessageContaining("importonly offers none here: " + WHY);
        }
    }

    /** IPC ruled out here: the pool's regions are not exported, and a handle of the plugin is not imported. */
    @Test
    void noHandleOfAPluginWhoseProbeRuledIpcOutIsExportedOrImportedHere() {
        InProcessMemoryPlugin plugin = new InProcessMemoryPlugin();
        ConduitPlugin noIpcHere = new ForwardingPlugin(new InProcessMemoryPlugin()) {
            @Override
            public Availability probe(PluginContext context) {
                return super.probe(context).without(Capability.IPC, WHY);
            }
        };
        try (Conduit producer = isolated().addPlugin(plugin).build();
             Conduit here = isolated().addPlugin(noIpcHere).build()) {
            byte[] handle = producer.pool("inproc").allocate(4096).exportHandle();
            assertThatThrownBy(() -> here.importRegion(handle)).isInstanceOf(NotSupportedException.class)
                    .hasMessage("plugin 'inproc' imports no IPC handles here: " + WHY);
            Region region = here.pool("inproc").allocate(4096);
            assertThatThrownBy(region::exportHandle).isInstanceOf(NotSupportedException.class)
                    .hasMessage("plugin 'inproc' exports no IPC handles here: " + WHY);
        }
    }

    /** A peer that offers only the transport ruled out here: the error says so, not "install or select it". */
    @Test
    void connectingToAPeerThatOffersOnlyTheRuledOutTransportSaysWhy() {
        try (Conduit elsewhere = isolated().addPlugin(TestPlugin.named("importonly")).build();
             Worker peer = elsewhere.newWorker(ThreadMode.SINGLE);
             Conduit here = isolated().addPlugin(importOnly()).addPlugin(TestPlugin.named("other")).build();
             Worker worker = here.newWorker(ThreadMode.SINGLE)) {
            assertThatThrownBy(() -> worker.connect(peer.address())).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("no transport in common")
                    .hasMessageContaining("'importonly' is selected here but offers no transport here: " + WHY)
                    .hasMessageNotContaining("install or select");
        }
    }
}
