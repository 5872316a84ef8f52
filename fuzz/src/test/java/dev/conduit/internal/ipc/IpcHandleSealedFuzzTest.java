package dev.conduit.internal.ipc;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.conduit.internal.codec.Envelope;
import dev.conduit.spi.InvalidHandleException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fields of an IPC handle, framed and sealed as its maker would: {@link IpcHandleFuzzTest}'s
 * random bytes almost never carry a matching CRC, so {@link IpcHandle#decode} refuses them on
 * {@code crc} whatever their fields say, and a field check it lost would go unseen. Sealed, the
 * fields alone decide: {@link IpcHandle#decode} and {@link IpcHandle#fieldsAt} agree, and an accepted
 * handle's region lies in its chunk and encodes back to the same bytes.
 */
class IpcHandleSealedFuzzTest {

    @FuzzTest(maxExecutions = 250_000, maxDuration = "2m")
    void sealedFieldsAreJudgedAlikeAndAnAcceptedRegionLiesInItsChunk(byte[] fields) {
        if (fields.length + Envelope.OVERHEAD > IpcHandle.MAX_LENGTH) {
            return; // refused by its length alone, as IpcHandleFuzzTest covers
        }
        byte[] bytes = Envelope.seal(Envelope.begin(IpcHandle.MAGIC, IpcHandle.VERSION).bytes(fields));
        IpcHandle handle;
        try {
            handle = IpcHandle.decode(bytes);
        } catch (InvalidHandleException e) {
            assertThat(e.field()).as("a sealed handle refused on its crc: %s", e.getMessage()).isNotEqualTo("crc");
            assertThat(IpcHandle.fieldsAt(bytes) >= 0).as("fieldsAt accepted what decode refused: %s", e.getMessage()).isFalse();
            return;
        }
        assertThat(IpcHandle.fieldsAt(bytes) >= 0).as("fieldsAt refused what decode accepted").isTrue();
        assertThat(handle.regionOffset()).isNotNegative().isLessThan(handle.chunkLength());
        assertThat(handle.regionLength()).isPositive().isLessThanOrEqualTo(handle.chunkLength() - handle.regionOffset());
        assertThat(handle.encode()).isEqualTo(bytes);
    }
}
