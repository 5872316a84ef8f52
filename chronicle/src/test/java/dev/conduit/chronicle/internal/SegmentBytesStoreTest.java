package dev.conduit.chronicle.internal;

import net.openhft.chronicle.bytes.Bytes;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.BufferOverflowException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A store pointed at a range of a larger segment: every access is bounded by the range, not only by the segment. */
class SegmentBytesStoreTest {

    private static final long OFFSET = 1000;
    private static final long LENGTH = 64;

    @Test
    void aStorePointedAtARangeReadsAndWritesOnlyThatRange() {
        MemorySegment memory = Arena.ofAuto().allocate(4096);
        memory.fill((byte) 0x5A);
        SegmentBytesStore store = new SegmentBytesStore(MemorySegment.NULL, () -> true, "a range", true);
        store.point(memory, OFFSET, LENGTH);
        assertThat(store.capacity()).isEqualTo(LENGTH);

        store.writeLong(0, 7L);
        store.writeInt(60, 9);
        store.write(8, new byte[] {1, 2, 3}, 0, 3);
        store.move(8, 20, 3);
        assertThat(memory.get(ValueLayout.JAVA_LONG_UNALIGNED, OFFSET)).isEqualTo(7L);
        assertThat(memory.get(ValueLayout.JAVA_INT_UNALIGNED, OFFSET + 60)).isEqualTo(9);
        assertThat(store.readByte(22)).isEqualTo((byte) 3);
        assertThat(store.compareAndSwapLong(0, 7L, 8L)).isTrue();
        assertThat(store.readVolatileLong(0)).isEqualTo(8L);

        assertThatThrownBy(() -> store.writeLong(60, 1L)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> store.readByte(-1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> store.readByte(LENGTH)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> store.write(60, new byte[8], 0, 8)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> store.move(0, 60, 8)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> store.writeOrderedLong(LENGTH, 1L)).isInstanceOf(IndexOutOfBoundsException.class);
        Bytes<Void> bytes = store.bytesForWrite();
        bytes.clear();
        assertThatThrownBy(() -> bytes.write(new byte[(int) LENGTH + 1])).isInstanceOf(BufferOverflowException.class);

        for (long i = 0; i < memory.byteSize(); i++) {
            if (i >= OFFSET && i < OFFSET + LENGTH) continue;
            assertThat(memory.get(ValueLayout.JAVA_BYTE, i)).as("byte %d, outside the range", i).isEqualTo((byte) 0x5A);
        }
    }

    @Test
    void aRangeOutsideTheSegmentIsRefused() {
        MemorySegment memory = Arena.ofAuto().allocate(128);
        SegmentBytesStore store = new SegmentBytesStore(MemorySegment.NULL, () -> true, "a range", true);
        assertThatThrownBy(() -> store.point(memory, 100, 64)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> store.point(memory, -1, 8)).isInstanceOf(IndexOutOfBoundsException.class);
    }
}
