package dev.conduit.plugin.memfd;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The memfd payload of a handle names a socket the importer then connects to. For any bytes the
 * decoder returns a payload whose socket is one plain name of the fd server's shape (never a path
 * out of the shared directory), or throws {@link InvalidHandleException}. Version 1 ends at the
 * token; version 2 names the producer's directory after it, and encodes back to the same bytes.
 */
class MemfdPayloadFuzzTest {

    @FuzzTest(maxExecutions = 100_000, maxDuration = "2m")
    void decodeAcceptsOnlyAnFdServerSocketName(byte[] bytes) {
        MemfdPayload payload;
        try {
            payload = MemfdPayload.decode(new PayloadReader(bytes, 0, bytes.length, "payload."));
        } catch (InvalidHandleException e) {
            assertThat(e.getMessage()).isNotBlank();
            return;
        }
        assertThat(payload.socketName()).doesNotContain("/").isNotIn(".", "..")
                .startsWith(FdProtocol.FILE_PREFIX + "-").endsWith(FdProtocol.SOCKET_SUFFIX).hasSize(FdProtocol.SOCKET_NAME_LENGTH)
                .matches(FdProtocol.FILE_PREFIX + "-[0-9a-f]{32}-[0-9a-f]{16}\\" + FdProtocol.SOCKET_SUFFIX);
        assertThat(payload.encode()).isEqualTo(bytes);
    }
}
