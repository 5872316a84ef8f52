package dev.conduit.tck.internal;

import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Transport;
import dev.conduit.tck.LoopbackPlugin;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The suites hand a transport's connect the reader the runtime hands it: a plugin's refusal of a
 * malformed address reads as an application would see it, not as an IPC handle's.
 */
class AddressesTest {

    @Test
    void aRefusedAddressIsNamedAsTheRuntimeNamesIt(@TempDir Path shared) {
        LoopbackPlugin plugin = new LoopbackPlugin();
        try (Transport transport = plugin.openTransport(TestContext.of(shared).forTransport(ThreadMode.SERIALIZED,
                (id, hb, ho, hl, pb, po, pl) -> { }))) {
            byte[] cut = Arrays.copyOf(transport.address(), 1);
            assertThatThrownBy(() -> transport.connect(Addresses.reader(plugin.name(), cut), cause -> { }))
                    .isInstanceOf(InvalidHandleException.class)
                    .hasMessageStartingWith("invalid Conduit worker address: field 'address.tck-loopback.");
        }
    }
}
