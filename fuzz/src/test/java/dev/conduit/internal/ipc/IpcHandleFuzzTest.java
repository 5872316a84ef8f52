package dev.conduit.internal.ipc;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.spi.InvalidHandleException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * IPC handles arrive from other processes. For any bytes, {@link IpcHandle#decode} returns a handle
 * or throws {@link InvalidHandleException}; the allocation-free check of the cache's hit path
 * ({@link IpcHandle#fieldsAt}) agrees with it; and a decoded handle encodes back to the same bytes.
 */
class IpcHandleFuzzTest {

    @FuzzTest(maxExecutions = 250_000, maxDuration = "2m")
    void decodeAcceptsOrNamesTheField(byte[] bytes) {
        IpcHandle handle;
        try {
            handle = IpcHandle.decode(bytes);
        } catch (InvalidHandleException e) {
            assertThat(e.getMessage()).isNotBlank();
            assertThat(IpcHandle.fieldsAt(bytes) >= 0).as("fieldsAt accepted what decode refused: %s", e.getMessage()).isFalse();
            return;
        }
        assertThat(IpcHandle.fieldsAt(bytes) >= 0).as("fieldsAt refused what decode accepted").isTrue();
        assertThat(handle.encode()).isEqualTo(bytes);
        int at = IpcHandle.fieldsAt(bytes);
        assertThat(IpcHandle.exportId(bytes, at)).isEqualTo(handle.exportId());
        assertThat(IpcHandle.regionLength(bytes, at)).isEqualTo(handle.regionLength());
    }
}
