package dev.conduit;

import dev.conduit.internal.ipc.InProcessMemoryPlugin;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.RecordingTransport;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;

import static dev.conduit.testing.TestConduits.isolated;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A plugin whose open operation returns null, which the SPI never allows (an object or an exception): the application
 * gets a {@code ConduitException} naming the plugin, the operation and whose fault it is, not a bare
 * {@code NullPointerException} from inside the runtime, which named neither (found by a third-party author's plugin).
 */
class PluginReturningNullTest {

    private static String refusal(String plugin, String operation) {
        return "plugin '" + plugin + "' returned null from " + operation + ", which returns an object or throws: that is the plugin's "
                + "fault (the TCK's PluginMetadataContract shows it); report it to the plugin's authors, and meanwhile leave it out "
                + "(transports=^" + plugin + ") or use another plugin";
    }

    @Test
    void aPoolOverAPluginWhoseOpenMemoryProviderReturnsNullSaysSo() {
        ConduitPlugin returnsNull = new ForwardingPlugin(new InProcessMemoryPlugin()) {
            @Override
            public MemoryProvider openMemoryProvider(PluginContext context) {
                return null;
            }
        };
        try (Conduit conduit = isolated().addPlugin(returnsNull).build()) {
            assertThatThrownBy(() -> conduit.pool("inproc")).isInstanceOf(ConduitException.class)
                    .hasMessage(refusal("inproc", "openMemoryProvider()"));
        }
    }

    @Test
    void anImportThroughAPluginWhoseIpcImporterReturnsNullSaysSo() {
        ConduitPlugin returnsNull = new ForwardingPlugin(new InProcessMemoryPlugin()) {
            @Override
            public IpcImporter ipcImporter(PluginContext context) {
                return null;
            }
        };
        try (Conduit producer = isolated().addPlugin(new InProcessMemoryPlugin()).build();
             Conduit consumer = isolated().addPlugin(returnsNull).build()) {
            byte[] handle = producer.pool("inproc").allocate(4096).exportHandle();
            assertThatThrownBy(() -> consumer.importRegion(handle)).isInstanceOf(ConduitException.class)
                    .hasMessage(refusal("inproc", "ipcImporter()"));
        }
    }

    /** The worker's other transport, opened before, is closed: nothing of a worker that failed to open stays open. */
    @Test
    void aWorkerOverAPluginWhoseOpenTransportReturnsNullSaysSoAndClosesTheOthers() {
        TestPlugin good = TestPlugin.named("good").priority(2);
        TestPlugin returnsNull = TestPlugin.named("nothing").priority(1).transports(c -> null);
        try (Conduit conduit = isolated().addPlugin(good).addPlugin(returnsNull).build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(ConduitException.class)
                    .hasMessage(refusal("nothing", "openTransport()"));
            assertThat(good.opened).singleElement().extracting(t -> ((RecordingTransport) t).closes()).isEqualTo(1);
        }
    }
}
