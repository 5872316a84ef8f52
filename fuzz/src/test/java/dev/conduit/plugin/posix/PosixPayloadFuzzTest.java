package dev.conduit.plugin.posix;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The posix payload of a handle names the chunk file to open. For any bytes the decoder returns a
 * path that stays inside the shared directory (relative, no {@code ..}, no empty or {@code .}
 * segment, no NUL), or throws {@link InvalidHandleException}.
 */
class PosixPayloadFuzzTest {

    @FuzzTest(maxExecutions = 100_000, maxDuration = "2m")
    void decodeAcceptsOnlyPathsBeneathTheDirectory(byte[] bytes) {
        String path;
        try {
            path = ExportPayload.decode(new PayloadReader(bytes, 0, bytes.length, "payload."));
        } catch (InvalidHandleException e) {
            assertThat(e.getMessage()).isNotBlank();
            return;
        }
        assertThat(path).isNotEmpty().doesNotStartWith("/").doesNotContain("\0");
        for (String segment : path.split("/", -1)) {
            assertThat(segment).as("segment of '%s'", path).isNotEmpty().isNotEqualTo(".").isNotEqualTo("..");
        }
        Path base = Path.of("/shared");
        assertThat(base.resolve(path).normalize().startsWith(base)).isTrue();
        assertThat(ExportPayload.encode(path)).isEqualTo(bytes);
    }
}
