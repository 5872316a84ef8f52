package dev.conduit.plugin.posix;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The posix payload of a handle names the chunk file to open, the file it must be (device and
 * inode) and the producer's directory, which decides nothing. For any bytes the decoder returns
 * the name of a chunk file directly in the shared directory, of the form a provider creates
 * ({@code conduit-posix-<owner>-<random>.chunk}: no {@code /}, no NUL), or throws
 * {@link InvalidHandleException}.
 */
class PosixPayloadFuzzTest {

    @FuzzTest(maxExecutions = 100_000, maxDuration = "2m")
    void decodeAcceptsOnlyChunkNamesDirectlyInTheDirectory(byte[] bytes) {
        ExportPayload payload;
        try {
            payload = ExportPayload.decode(new PayloadReader(bytes, 0, bytes.length, "payload."));
        } catch (InvalidHandleException e) {
            assertThat(e.getMessage()).isNotBlank();
            return;
        }
        String path = payload.path();
        assertThat(path).startsWith(PosixMemoryProvider.FILE_PREFIX + "-").endsWith(PosixMemoryProvider.CHUNK_SUFFIX)
                .doesNotContain("/").doesNotContain("\0");
        Path base = Path.of("/shared");
        assertThat(base.resolve(path).normalize().getParent()).isEqualTo(base);
        assertThat(ExportPayload.encode(path, payload.directory(), payload.device(), payload.inode())).isEqualTo(bytes);
    }
}
