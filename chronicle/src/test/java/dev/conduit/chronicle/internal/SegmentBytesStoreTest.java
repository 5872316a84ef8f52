package dev.conduit.chronicle.internal;

import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;
import net.openhft.chronicle.bytes.RandomDataInput;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

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

    /** Chronicle's default of canReadDirect() calls itself: the store's answer ended in StackOverflowError. */
    @Test
    void theStoreSaysItCannotBeReadDirectly() {
        SegmentBytesStore store = new SegmentBytesStore(Arena.ofAuto().allocate(64), () -> true, "a segment", true);
        assertThat(store.canReadDirect()).isFalse();
        assertThat(store.canReadDirect(8)).isFalse();
    }

    @Test
    void aNumberAppendedAsTextIsWrittenInTheRangeOnly() {
        MemorySegment memory = Arena.ofAuto().allocate(4096);
        memory.fill((byte) 0x5A);
        SegmentBytesStore store = new SegmentBytesStore(MemorySegment.NULL, () -> true, "a range", true);
        store.point(memory, OFFSET, LENGTH);
        assertThat(store.appendAndReturnLength(LENGTH - 5, true, 125, 2, false)).as("the length of -1.25").isEqualTo(5);
        assertThat(new String(memory.asSlice(OFFSET + LENGTH - 5, 5).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.ISO_8859_1))
                .isEqualTo("-1.25");
        assertThatThrownBy(() -> store.appendAndReturnLength(LENGTH - 4, true, 125, 2, false)).as("-1.25 in the last 4 bytes")
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(memory.get(ValueLayout.JAVA_BYTE, OFFSET + LENGTH)).as("the byte after the range").isEqualTo((byte) 0x5A);
        assertThat(memory.get(ValueLayout.JAVA_BYTE, OFFSET - 1)).as("the byte before the range").isEqualTo((byte) 0x5A);
    }

    /**
     * A number whose decimal point is right of its last digit (an exponent of 0 or less: zeros after
     * the digits, then ".0" when asked) is written as Chronicle's own heap store writes it.
     */
    @Test
    void aNumberWithZerosAfterItsDigitsIsAppendedAsChroniclesOwnStoreAppendsIt() {
        SegmentBytesStore store = new SegmentBytesStore(Arena.ofAuto().allocate(64), () -> true, "a segment", true);
        BytesStore<?, byte[]> chronicles = BytesStore.wrap(new byte[64]);
        for (boolean append0 : new boolean[] {true, false}) {
            for (int exponent : new int[] {0, -1, -3}) {
                long length = store.appendAndReturnLength(0, true, 25, exponent, append0);
                long expected = chronicles.appendAndReturnLength(0, true, 25, exponent, append0);
                assertThat(text(store, length)).as("-25 with exponent %d, append0 %s", exponent, append0).isEqualTo(text(chronicles, expected));
            }
        }
        assertThat(text(store, store.appendAndReturnLength(0, false, 5, -3, true))).isEqualTo("5000.0");
    }

    private static String text(RandomDataInput bytes, long length) {
        byte[] text = new byte[(int) length];
        for (int i = 0; i < length; i++) text[i] = bytes.readByte(i);
        return new String(text, StandardCharsets.ISO_8859_1);
    }

    /** {@code testAndSetInt} sets the int when it is the expected one, and otherwise leaves it and throws, naming the offset and the view. */
    @Test
    void testAndSetIntSetsTheExpectedIntAndRefusesAnother() {
        SegmentBytesStore store = new SegmentBytesStore(Arena.ofAuto().allocate(64, 8), () -> true, "a Region of 64 bytes", true);
        store.testAndSetInt(8, 0, 5);
        assertThat(store.readInt(8)).isEqualTo(5);
        assertThatThrownBy(() -> store.testAndSetInt(8, 0, 6)).isInstanceOf(IllegalStateException.class)
                .hasMessage("int at offset 8 of a Region of 64 bytes was not 0");
        assertThat(store.readInt(8)).isEqualTo(5);
    }

    /**
     * A misaligned atomic is refused naming the view, the operation, the offset and the remedy; the
     * segment's own refusal ("Target offset 3 is incompatible with alignment constraint 8 (of j8)
     * for segment MemorySegment{ ... address: 0x... }") named none of them. Every atomic a view has.
     */
    @Test
    void aMisalignedAtomicSaysWhichViewAndOffsetAndHowToAlignIt() {
        SegmentBytesStore store = new SegmentBytesStore(Arena.ofAuto().allocate(64, 8), () -> true, "a Region of 64 bytes", true);
        Map<String, ThrowingCallable> atomics = new LinkedHashMap<>();
        atomics.put("compareAndSwapLong", () -> store.compareAndSwapLong(3, 0, 1));
        atomics.put("compareAndSwapInt", () -> store.compareAndSwapInt(3, 0, 1));
        atomics.put("compareAndSwapDouble", () -> store.compareAndSwapDouble(3, 0, 1));
        atomics.put("compareAndSwapFloat", () -> store.compareAndSwapFloat(3, 0, 1));
        atomics.put("addAndGetLong", () -> store.addAndGetLong(4, 1));
        atomics.put("addAndGetInt", () -> store.addAndGetInt(3, 1));
        atomics.put("addAndGetDouble", () -> store.addAndGetDouble(4, 1));
        atomics.put("addAndGetFloat", () -> store.addAndGetFloat(3, 1));
        atomics.put("readVolatileLong", () -> store.readVolatileLong(3));
        atomics.put("readVolatileInt", () -> store.readVolatileInt(3));
        atomics.put("readVolatileShort", () -> store.readVolatileShort(3));
        atomics.put("writeVolatileLong", () -> store.writeVolatileLong(3, 1));
        atomics.put("writeVolatileInt", () -> store.writeVolatileInt(3, 1));
        atomics.put("writeVolatileShort", () -> store.writeVolatileShort(3, (short) 1));
        atomics.put("writeOrderedLong", () -> store.writeOrderedLong(3, 1));
        atomics.put("writeOrderedInt", () -> store.writeOrderedInt(3, 1));
        atomics.forEach((operation, call) -> assertThatThrownBy(call).as(operation)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Chronicle view of a Region of 64 bytes: " + operation + " at offset ")
                .hasMessageContaining("-byte aligned").hasMessageContaining("lay the field out at an offset that is a multiple of"));

        SegmentBytesStore range = new SegmentBytesStore(MemorySegment.NULL, () -> true, "a message", true);
        range.point(Arena.ofAuto().allocate(64, 8), 4, 16);
        assertThatThrownBy(() -> range.compareAndSwapLong(0, 0, 1)).as("offset 0 of a view that starts 4 bytes in")
                .hasMessageContaining("compareAndSwapLong at offset 0 is not 8-byte aligned")
                .hasMessageContaining("this view starts 4 bytes into its memory");
        assertThat(range.compareAndSwapLong(4, 0, 1)).as("4 bytes in: aligned").isTrue();
    }

    /**
     * The floating-point volatile and ordered accesses are atomics a view has too: misaligned, each
     * is refused naming the call made, as {@code compareAndSwapFloat/Double} and
     * {@code addAndGetFloat/Double} are; aligned, each reads or writes the value's raw bits, as
     * Chronicle's defaults do. Until 2026-12-07 they were Chronicle's defaults over the int and long
     * accesses, and the message named those ("readVolatileLong at offset 4"), a call the caller
     * never made.
     */
    @Test
    void aMisalignedFloatingPointVolatileOrOrderedAccessIsNamedAsTheCallMade() {
        SegmentBytesStore store = new SegmentBytesStore(Arena.ofAuto().allocate(64, 8), () -> true, "a Region of 64 bytes", true);
        Map<String, ThrowingCallable> atomics = new LinkedHashMap<>();
        atomics.put("readVolatileDouble", () -> store.readVolatileDouble(4));
        atomics.put("readVolatileFloat", () -> store.readVolatileFloat(3));
        atomics.put("writeVolatileDouble", () -> store.writeVolatileDouble(4, 1));
        atomics.put("writeVolatileFloat", () -> store.writeVolatileFloat(3, 1));
        atomics.put("writeOrderedDouble", () -> store.writeOrderedDouble(4, 1));
        atomics.put("writeOrderedFloat", () -> store.writeOrderedFloat(3, 1));
        atomics.forEach((operation, call) -> assertThatThrownBy(call).as(operation)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Chronicle view of a Region of 64 bytes: " + operation + " at offset "));

        store.writeVolatileDouble(8, 1.5).writeOrderedDouble(16, -2.5).writeVolatileFloat(24, 3.5f).writeOrderedFloat(28, Float.NaN);
        assertThat(store.readVolatileDouble(8)).isEqualTo(1.5);
        assertThat(store.readDouble(16)).isEqualTo(-2.5);
        assertThat(store.readVolatileFloat(24)).isEqualTo(3.5f);
        assertThat(store.readInt(28)).isEqualTo(Float.floatToRawIntBits(Float.NaN));
    }

    /**
     * A store's {@code toString()} says what it views and whether that is closed, where Chronicle's
     * own stores print their bytes; the bytes are a call away, and a view's cursor prints them (and,
     * once closed, the exception: Chronicle's toString catches it). Neither throws.
     */
    @Test
    void aStoreSaysWhatItViewsAndItsCursorPrintsTheBytes() {
        AtomicBoolean open = new AtomicBoolean(true);
        SegmentBytesStore store = new SegmentBytesStore(Arena.ofAuto().allocate(8), open::get, "a Region of 8 bytes", true);
        store.write(0, "abcdefgh".getBytes(StandardCharsets.ISO_8859_1));
        assertThat(store.toString()).isEqualTo("SegmentBytesStore[a Region of 8 bytes, 8 bytes]");
        assertThat(store.to8bitString()).isEqualTo("abcdefgh");
        assertThat(store.bytesForRead().toString()).isEqualTo("abcdefgh");
        open.set(false);
        assertThat(store.toString()).isEqualTo("SegmentBytesStore[a Region of 8 bytes, 8 bytes, closed]");
        assertThat(store.bytesForRead().toString()).as("a closed view's cursor: Chronicle prints the exception, not throwing it")
                .startsWith("java.lang.IllegalStateException: Chronicle view of a Region of 8 bytes used after it was closed");
    }

    /**
     * Every access of a store whose owner is closed throws naming it, also those no view test
     * reaches (a volatile byte, a copy, a store used as the source of another's write), rather than
     * reading or writing memory that may by then be another region's or another message's.
     */
    @Test
    void everyAccessOfAClosedStoreThrowsNamingIt() {
        AtomicBoolean open = new AtomicBoolean(true);
        SegmentBytesStore closed = new SegmentBytesStore(Arena.ofAuto().allocate(64, 8), open::get, "a Region of 64 bytes", true);
        SegmentBytesStore other = new SegmentBytesStore(Arena.ofAuto().allocate(64, 8), () -> true, "another", true);
        open.set(false);
        Map<String, ThrowingCallable> accesses = new LinkedHashMap<>();
        accesses.put("readByte", () -> closed.readByte(0));
        accesses.put("readVolatileByte", () -> closed.readVolatileByte(0));
        accesses.put("writeVolatileByte", () -> closed.writeVolatileByte(0, (byte) 1));
        accesses.put("copy", closed::copy);
        accesses.put("a write from it", () -> other.write(0, closed, 0, 8));
        accesses.put("a write into it", () -> closed.write(0, other, 0, 8));
        accesses.forEach((access, call) -> assertThatThrownBy(call).as(access).isInstanceOf(IllegalStateException.class)
                .hasMessage("Chronicle view of a Region of 64 bytes used after it was closed; a view is valid only while what it views is open"));
    }

    /**
     * Every write to a store over read-only memory is refused by the view, saying so and what to do,
     * also those the received-payload test does not make (a volatile byte, a move, a native write, a
     * ByteBuffer's bytes): the segment's own refusal names neither the view nor the remedy.
     */
    @Test
    void everyWriteToReadOnlyMemoryIsRefusedSayingSo() {
        SegmentBytesStore readOnly = new SegmentBytesStore(Arena.ofAuto().allocate(64, 8).asReadOnly(), () -> true, "a payload", true);
        Map<String, ThrowingCallable> writes = new LinkedHashMap<>();
        writes.put("writeVolatileByte", () -> readOnly.writeVolatileByte(0, (byte) 1));
        writes.put("move", () -> readOnly.move(0, 8, 8));
        writes.put("nativeWrite", () -> readOnly.nativeWrite(0, 0, 0));
        writes.put("a ByteBuffer's bytes", () -> readOnly.write(0, ByteBuffer.allocate(8), 0, 8));
        writes.forEach((write, call) -> assertThatThrownBy(call).as(write).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Chronicle view of a payload is read-only: this process may only read that memory"));
    }

    /** An access outside the store names the view; the JDK's "Range [60, 60 + 8) out of bounds for length 64" did not. */
    @Test
    void anAccessOutsideTheStoreSaysWhichViewAndItsOffsets() {
        SegmentBytesStore store = new SegmentBytesStore(MemorySegment.NULL, () -> true, "a Region of 64 bytes", true);
        store.point(Arena.ofAuto().allocate(4096), OFFSET, LENGTH);
        assertThatThrownBy(() -> store.writeOrderedLong(60, 1)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessage("Chronicle view of a Region of 64 bytes: the access of [60, 60 + 8) is outside it; its offsets run from 0 to 64 "
                        + "(capacity()), those of a region's view over the whole region, of a message's over its payload");
        assertThatThrownBy(() -> store.readByte(-1)).hasMessageStartingWith("Chronicle view of a Region of 64 bytes: the access of [-1, -1 + 1) is outside it");
        assertThatThrownBy(() -> store.write(60, new byte[8], 0, 8)).hasMessageContaining("[60, 60 + 8) is outside it");
        assertThatThrownBy(() -> store.write(0, new byte[8], 0, -1)).as("a negative length")
                .hasMessageStartingWith("Chronicle view of a Region of 64 bytes: the access of [0, 0 + -1) is outside it");
    }

    /**
     * A {@code ByteBuffer}'s bytes are taken at the offset given, counted from the buffer's start as
     * Chronicle's own stores count it, whatever the buffer's position and limit, which stay as they were.
     */
    @Test
    void aByteBufferIsCopiedFromTheOffsetGivenWhateverItsPositionAndLimit() {
        MemorySegment memory = Arena.ofAuto().allocate(4096);
        SegmentBytesStore store = new SegmentBytesStore(MemorySegment.NULL, () -> true, "a range", true);
        store.point(memory, OFFSET, LENGTH);
        ByteBuffer buffer = ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}).limit(7).position(6);
        store.write(4, buffer, 2, 5);
        assertThat(memory.asSlice(OFFSET + 4, 5).toArray(ValueLayout.JAVA_BYTE)).containsExactly(3, 4, 5, 6, 7);
        assertThat(buffer.position()).isEqualTo(6);
        assertThat(buffer.limit()).isEqualTo(7);
    }

    /**
     * Bytes from a store of another kind (one of Chronicle's own) are read from the offset given in
     * it, eight at a time and then one at a time, not from its start.
     */
    @Test
    void bytesFromAnotherKindOfStoreAreCopiedFromTheirOffsetGiven() {
        MemorySegment memory = Arena.ofAuto().allocate(4096);
        SegmentBytesStore store = new SegmentBytesStore(MemorySegment.NULL, () -> true, "a range", true);
        store.point(memory, OFFSET, LENGTH);
        byte[] source = new byte[20];
        for (int i = 0; i < source.length; i++) source[i] = (byte) (i + 1);
        store.write(0, BytesStore.wrap(source), 4, 11);
        assertThat(memory.asSlice(OFFSET, 12).toArray(ValueLayout.JAVA_BYTE)).containsExactly(5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0);
    }

    /**
     * A string that does not fit at a random-access position writes nothing: it wrote its stop-bit
     * length, then threw, and a reader of that offset found a length over bytes never written.
     */
    @Test
    void anEightBitStringThatDoesNotFitWritesNothing() {
        MemorySegment memory = Arena.ofAuto().allocate(4096);
        SegmentBytesStore store = new SegmentBytesStore(MemorySegment.NULL, () -> true, "a range", true);
        store.point(memory, OFFSET, LENGTH);
        assertThatThrownBy(() -> store.write8bit(60, "abcdefgh", 0, 8)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("the access of [60, 60 + 9)");
        assertThatThrownBy(() -> store.write8bit(56, BytesStore.from("abcdefgh")))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(memory.toArray(ValueLayout.JAVA_BYTE)).containsOnly(0);
        assertThat(store.write8bit(55, "abcdefgh", 0, 8)).as("one that just fits").isEqualTo(LENGTH);
        assertThat(store.readByte(55)).isEqualTo((byte) 8);
    }

    @Test
    void aRangeOutsideTheSegmentIsRefused() {
        MemorySegment memory = Arena.ofAuto().allocate(128);
        SegmentBytesStore store = new SegmentBytesStore(MemorySegment.NULL, () -> true, "a range", true);
        assertThatThrownBy(() -> store.point(memory, 100, 64)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> store.point(memory, -1, 8)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void copiesBulkAndNativeTransfersAndStringsUseTheRangeNotTheSegmentsStart() {
        MemorySegment memory = Arena.ofAuto().allocate(4096);
        for (int i = 0; i < 4096; i++) memory.set(ValueLayout.JAVA_BYTE, i, (byte) i);
        SegmentBytesStore store = new SegmentBytesStore(MemorySegment.NULL, () -> true, "a range", true);
        store.point(memory, OFFSET, LENGTH);

        SegmentBytesStore copy = store.copy();
        assertThat(copy.capacity()).isEqualTo(LENGTH);
        assertThat(copy.readByte(0)).as("the range's first byte, not the segment's").isEqualTo((byte) OFFSET);

        MemorySegment other = Arena.ofAuto().allocate(256);
        for (int i = 0; i < 256; i++) other.set(ValueLayout.JAVA_BYTE, i, (byte) (100 + i));
        SegmentBytesStore source = new SegmentBytesStore(MemorySegment.NULL, () -> true, "another range", true);
        source.point(other, 200, 16);
        store.write(0, source, 0, 16);
        assertThat(memory.get(ValueLayout.JAVA_BYTE, OFFSET)).as("from the source's range").isEqualTo((byte) (100 + 200));
        assertThatThrownBy(() -> store.write(0, source, 8, 16)).as("past the source's range")
                .isInstanceOf(IndexOutOfBoundsException.class);

        try (Arena arena = Arena.ofConfined()) {
            MemorySegment nativeMemory = arena.allocate(8);
            store.nativeRead(8, nativeMemory.address(), 8);
            assertThat(nativeMemory.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo(memory.get(ValueLayout.JAVA_BYTE, OFFSET + 8));
            nativeMemory.fill((byte) 77);
            store.nativeWrite(nativeMemory.address(), 56, 8);
            assertThat(memory.get(ValueLayout.JAVA_BYTE, OFFSET + 63)).isEqualTo((byte) 77);
            assertThatThrownBy(() -> store.nativeWrite(nativeMemory.address(), 60, 8)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> store.nativeRead(60, nativeMemory.address(), 8)).isInstanceOf(IndexOutOfBoundsException.class);
        }

        assertThat(store.write8bit(32, "abc", 0, 3)).isEqualTo(36);
        assertThat(memory.get(ValueLayout.JAVA_BYTE, OFFSET + 33)).isEqualTo((byte) 'a');
        assertThatThrownBy(() -> store.write8bit(60, "abcdef", 0, 6)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(memory.get(ValueLayout.JAVA_BYTE, OFFSET + LENGTH)).as("the byte after the range").isEqualTo((byte) (OFFSET + LENGTH));
    }
}
