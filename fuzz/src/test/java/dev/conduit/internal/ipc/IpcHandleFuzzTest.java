package dev.conduit.internal.ipc;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * IPC handles arrive from other processes. For any bytes, {@link IpcHandle#decode} returns a handle
 * or throws {@link InvalidHandleException}; the allocation-free check of the cache's hit path
 * ({@link IpcHandle#isValid}) agrees with it; and a decoded handle encodes back to the same bytes.
 */
class IpcHandleFuzzTest {

    @FuzzTest(maxExecutions = 250_000, maxDuration = "2m")
    void decodeAcceptsOrNamesTheField(byte[] bytes) {
        IpcHandle handle;
        try {
            handle = IpcHandle.decode(bytes);
        } catch (InvalidHandleException e) {
            assertThat(e.getMessage()).isNotBlank();
            assertThat(IpcHandle.isValid(bytes)).as("isValid accepted what decode refused: %s", e.getMessage()).isFalse();
            return;
        }
        assertThat(IpcHandle.isValid(bytes)).as("isValid refused what decode accepted").isTrue();
        assertThat(handle.encode()).isEqualTo(bytes);
        assertThat(IpcHandle.exportId(bytes)).isEqualTo(handle.exportId());
        assertThat(IpcHandle.regionLength(bytes)).isEqualTo(handle.regionLength());
    }
}
