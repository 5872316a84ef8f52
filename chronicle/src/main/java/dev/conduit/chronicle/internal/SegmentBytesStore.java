package dev.conduit.chronicle.internal;

import net.openhft.chronicle.bytes.AbstractBytes;
import net.openhft.chronicle.bytes.BytesStore;
import net.openhft.chronicle.bytes.BytesUtil;
import net.openhft.chronicle.bytes.RandomDataInput;
import net.openhft.chronicle.bytes.internal.AbstractBytesStore;
import net.openhft.chronicle.bytes.internal.BytesInternal;
import net.openhft.chronicle.core.UnsafeMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.function.BooleanSupplier;

/**
 * A Chronicle {@link BytesStore} whose every access goes through a {@link MemorySegment}, never
 * through a raw address: bounded by the memory it is pointed at (an access outside it throws
 * {@link IndexOutOfBoundsException} naming the view), refused with {@link IllegalStateException} once its owner
 * is closed ({@link #open}, checked first), and — because the segment's arena is a shared one —
 * safe against a concurrent unmap: the JVM's close of a shared arena waits out accesses in
 * flight, and a later access throws instead of touching unmapped memory.
 *
 * <p>It reports {@link #isDirectMemory()} {@code false} and has no address
 * ({@link #addressForRead}: {@link UnsupportedOperationException}), so Chronicle's raw-address
 * fast paths never bypass these checks. Over read-only memory (a received payload, an imported
 * region mapped for reading only) {@link #readWrite()} is {@code false} and every write throws
 * {@link IllegalArgumentException} saying so, as the segment's own writes do. Primitives are
 * native byte order, at any alignment; atomics (CAS, volatile, ordered) need natural alignment (otherwise
 * {@link IllegalArgumentException} naming the view, the offset and how to align it) and are the CPU's,
 * coherent across processes.
 *
 * <p>The store can be re-pointed so that one store serves one message after another without
 * allocating: at a whole segment ({@link #point(MemorySegment)}), or at a range of one
 * ({@link #point(MemorySegment, long, long)}), which spares a view of the range. Over a range,
 * the store bounds every access by the range itself; the segment bounds it too.
 */
public final class SegmentBytesStore extends AbstractBytesStore<SegmentBytesStore, Void> {

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble DOUBLE = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final VarHandle BYTE_ATOMIC = ValueLayout.JAVA_BYTE.varHandle();
    private static final VarHandle SHORT_ATOMIC = ValueLayout.JAVA_SHORT.varHandle();
    private static final VarHandle INT_ATOMIC = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle LONG_ATOMIC = ValueLayout.JAVA_LONG.varHandle();

    private final BooleanSupplier open;
    private final String what;
    private final boolean shared;
    private MemorySegment segment;
    /** Where the store's offset 0 is in {@link #segment}. */
    private long base;
    /** The store's length: accesses are bounded by it, not only by the segment. */
    private long size;
    /** Whether {@link #segment} is read-only, kept with it so that a write checks a field, not the segment. */
    private boolean readOnly;

    /**
     * @param segment the memory (its arena bounds its lifetime)
     * @param open    whether the owner is still open; checked before every access
     * @param what    what the store views, for the message of a use after close
     * @param shared  whether other processes map the memory too
     */
    public SegmentBytesStore(MemorySegment segment, BooleanSupplier open, String what, boolean shared) {
        super(false);
        point(segment);
        this.open = open;
        this.what = what;
        this.shared = shared;
    }

    /** Points the store at other memory (same owner); for flyweights. */
    public void point(MemorySegment memory) {
        point(memory, 0, memory.byteSize());
    }

    /** Points the store at {@code length} bytes of {@code memory} from {@code offset} (same owner), without a view. */
    public void point(MemorySegment memory, long offset, long length) {
        java.util.Objects.checkFromIndexSize(offset, length, memory.byteSize());
        this.segment = memory;
        this.base = offset;
        this.size = length;
        this.readOnly = memory.isReadOnly();
    }

    /** Where {@code length} bytes at the store's {@code offset} are in the segment, once they are checked to be in the store. */
    private long at(long offset, long length) {
        if ((offset | length) < 0 || offset > size - length) throw outside(offset, length);
        return base + offset;
    }

    /**
     * An access outside the store, said of the view: {@code Objects.checkFromIndexSize}'s "Range
     * [4096, 4096 + 8) out of bounds for length 4096" did not say which view, of which memory,
     * refused it. The check is written out in {@link #at} for that, with the same comparisons.
     */
    private IndexOutOfBoundsException outside(long offset, long length) {
        return new IndexOutOfBoundsException("Chronicle view of " + what + ": the access of ["
                + offset + ", " + offset + " + " + length + ") is outside it; its offsets run from 0 to " + size
                + " (capacity()), those of a region's view over the whole region, of a message's over its payload");
    }

    /** The memory, after the liveness check. */
    private MemorySegment m() {
        if (!open.getAsBoolean()) {
            throw new IllegalStateException("Chronicle view of " + what + " used after it was closed; "
                    + "a view is valid only while what it views is open");
        }
        return segment;
    }

    /**
     * The memory for a write, after the liveness check. Read-only memory is refused here, not by the
     * segment: its message ("Attempt to write a read-only segment") names neither the view nor why
     * it cannot be written, and Chronicle passes it on as the cause of exceptions of its own.
     */
    private MemorySegment w() {
        // The remedy names bytesStore().copy(): Bytes.copy() of a view is Chronicle's NativeBytes, whose memory no
        // collection frees, so a handler that copied each payload so leaked (1 MiB per copy, none of it freed).
        MemorySegment s = m();
        if (readOnly) {
            throw new IllegalArgumentException("Chronicle view of " + what + " is read-only: this process may only read "
                    + "that memory (a received payload is the transport's, an imported region may be mapped for reading "
                    + "only); to change the bytes, copy them (bytesStore().copy(), which the garbage collector frees; "
                    + "Bytes.copy() takes native memory that only its releaseLast() frees) and write the copy");
        }
        return s;
    }

    // ---------------------------------------------------------------- identity

    @Override
    public long capacity() {
        return size;
    }

    @Override
    public boolean isDirectMemory() {
        return false;
    }

    @Override
    public boolean sharedMemory() {
        return shared;
    }

    /** {@code false} over read-only memory, whose every write throws. */
    @Override
    public boolean readWrite() {
        return !readOnly;
    }

    @Override
    public Void underlyingObject() {
        return null;
    }

    /**
     * {@code false}: there is no address to read through. Chronicle's default of this call calls
     * itself (2.27ea0) and ended in {@link StackOverflowError}.
     */
    @Override
    public boolean canReadDirect() {
        return false;
    }

    @Override
    public long addressForRead(long offset) {
        throw noAddress();
    }

    @Override
    public long addressForWrite(long offset) {
        throw noAddress();
    }

    @Override
    public long addressForWritePosition() {
        throw noAddress();
    }

    private static UnsupportedOperationException noAddress() {
        return new UnsupportedOperationException("a Conduit Chronicle view has no raw address: every access goes through "
                + "its bounds and close checks");
    }

    /** A copy in native memory of this JVM that the garbage collector frees (an automatic arena), independent of the region. */
    @Override
    public SegmentBytesStore copy() {
        MemorySegment source = m();
        MemorySegment copy = Arena.ofAuto().allocate(Math.max(1, size), 8).asSlice(0, size);
        MemorySegment.copy(source, base, copy, 0, size);
        return new SegmentBytesStore(copy, () -> true, "a copy", false);
    }

    @Override
    protected void performRelease() {
        // The memory is Conduit's: releasing a view frees nothing.
    }

    // ---------------------------------------------------------------- reads

    @Override
    public byte readByte(long offset) {
        return m().get(ValueLayout.JAVA_BYTE, at(offset, 1));
    }

    @Override
    public short readShort(long offset) {
        return m().get(SHORT, at(offset, 2));
    }

    @Override
    public int readInt(long offset) {
        return m().get(INT, at(offset, 4));
    }

    @Override
    public long readLong(long offset) {
        return m().get(LONG, at(offset, 8));
    }

    @Override
    public float readFloat(long offset) {
        return m().get(FLOAT, at(offset, 4));
    }

    @Override
    public double readDouble(long offset) {
        return m().get(DOUBLE, at(offset, 8));
    }

    @Override
    public byte readVolatileByte(long offset) {
        return (byte) BYTE_ATOMIC.getVolatile(m(), at(offset, 1));
    }

    @Override
    public short readVolatileShort(long offset) {
        MemorySegment s = m();
        long at = at(offset, 2);
        try {
            return (short) SHORT_ATOMIC.getVolatile(s, at);
        } catch (IllegalArgumentException e) {
            throw misaligned("readVolatileShort", offset, 2, e);
        }
    }

    @Override
    public int readVolatileInt(long offset) {
        return getVolatileInt("readVolatileInt", offset);
    }

    @Override
    public long readVolatileLong(long offset) {
        return getVolatileLong("readVolatileLong", offset);
    }

    /** The volatile read of the raw bits, as Chronicle's default; here so that a misaligned one is said of this operation. */
    @Override
    public float readVolatileFloat(long offset) {
        return Float.intBitsToFloat(getVolatileInt("readVolatileFloat", offset));
    }

    /** The volatile read of the raw bits, as Chronicle's default; here so that a misaligned one is said of this operation. */
    @Override
    public double readVolatileDouble(long offset) {
        return Double.longBitsToDouble(getVolatileLong("readVolatileDouble", offset));
    }

    private int getVolatileInt(String operation, long offset) {
        MemorySegment s = m();
        long at = at(offset, 4);
        try {
            return (int) INT_ATOMIC.getVolatile(s, at);
        } catch (IllegalArgumentException e) {
            throw misaligned(operation, offset, 4, e);
        }
    }

    private long getVolatileLong(String operation, long offset) {
        MemorySegment s = m();
        long at = at(offset, 8);
        try {
            return (long) LONG_ATOMIC.getVolatile(s, at);
        } catch (IllegalArgumentException e) {
            throw misaligned(operation, offset, 8, e);
        }
    }

    /**
     * The segment's refusal of an atomic access at a misaligned address (the only
     * {@link IllegalArgumentException} its {@code VarHandle}s throw once the access is in bounds and
     * the memory writable), said of the view: the segment's own message names neither the view nor
     * the remedy, and gives a raw address.
     */
    private IllegalArgumentException misaligned(String operation, long offset, int size, IllegalArgumentException cause) {
        return new IllegalArgumentException("Chronicle view of " + what + ": " + operation + " at offset " + offset
                + " is not " + size + "-byte aligned in memory, and an atomic access must be (a misaligned one would not "
                + "be atomic); lay the field out at an offset that is a multiple of " + size
                + (base == 0 ? "" : " from an aligned start (this view starts " + base + " bytes into its memory)"), cause);
    }

    // ---------------------------------------------------------------- writes

    @Override
    public SegmentBytesStore writeByte(long offset, byte value) {
        w().set(ValueLayout.JAVA_BYTE, at(offset, 1), value);
        return this;
    }

    @Override
    public SegmentBytesStore writeShort(long offset, short value) {
        w().set(SHORT, at(offset, 2), value);
        return this;
    }

    @Override
    public SegmentBytesStore writeInt(long offset, int value) {
        w().set(INT, at(offset, 4), value);
        return this;
    }

    @Override
    public SegmentBytesStore writeLong(long offset, long value) {
        w().set(LONG, at(offset, 8), value);
        return this;
    }

    @Override
    public SegmentBytesStore writeFloat(long offset, float value) {
        w().set(FLOAT, at(offset, 4), value);
        return this;
    }

    @Override
    public SegmentBytesStore writeDouble(long offset, double value) {
        w().set(DOUBLE, at(offset, 8), value);
        return this;
    }

    @Override
    public SegmentBytesStore writeOrderedInt(long offset, int value) {
        return setReleaseInt("writeOrderedInt", offset, value);
    }

    @Override
    public SegmentBytesStore writeOrderedLong(long offset, long value) {
        return setReleaseLong("writeOrderedLong", offset, value);
    }

    /** The release store of the raw bits, as Chronicle's default; here so that a misaligned one is said of this operation. */
    @Override
    public SegmentBytesStore writeOrderedFloat(long offset, float value) {
        return setReleaseInt("writeOrderedFloat", offset, Float.floatToRawIntBits(value));
    }

    /** The release store of the raw bits, as Chronicle's default; here so that a misaligned one is said of this operation. */
    @Override
    public SegmentBytesStore writeOrderedDouble(long offset, double value) {
        return setReleaseLong("writeOrderedDouble", offset, Double.doubleToRawLongBits(value));
    }

    private SegmentBytesStore setReleaseInt(String operation, long offset, int value) {
        MemorySegment s = w();
        long at = at(offset, 4);
        try {
            INT_ATOMIC.setRelease(s, at, value);
        } catch (IllegalArgumentException e) {
            throw misaligned(operation, offset, 4, e);
        }
        return this;
    }

    private SegmentBytesStore setReleaseLong(String operation, long offset, long value) {
        MemorySegment s = w();
        long at = at(offset, 8);
        try {
            LONG_ATOMIC.setRelease(s, at, value);
        } catch (IllegalArgumentException e) {
            throw misaligned(operation, offset, 8, e);
        }
        return this;
    }

    @Override
    public SegmentBytesStore writeVolatileByte(long offset, byte value) {
        BYTE_ATOMIC.setVolatile(w(), at(offset, 1), value);
        return this;
    }

    @Override
    public SegmentBytesStore writeVolatileShort(long offset, short value) {
        MemorySegment s = w();
        long at = at(offset, 2);
        try {
            SHORT_ATOMIC.setVolatile(s, at, value);
        } catch (IllegalArgumentException e) {
            throw misaligned("writeVolatileShort", offset, 2, e);
        }
        return this;
    }

    @Override
    public SegmentBytesStore writeVolatileInt(long offset, int value) {
        return setVolatileInt("writeVolatileInt", offset, value);
    }

    @Override
    public SegmentBytesStore writeVolatileLong(long offset, long value) {
        return setVolatileLong("writeVolatileLong", offset, value);
    }

    /** The volatile store of the raw bits, as Chronicle's default; here so that a misaligned one is said of this operation. */
    @Override
    public SegmentBytesStore writeVolatileFloat(long offset, float value) {
        return setVolatileInt("writeVolatileFloat", offset, Float.floatToRawIntBits(value));
    }

    /** The volatile store of the raw bits, as Chronicle's default; here so that a misaligned one is said of this operation. */
    @Override
    public SegmentBytesStore writeVolatileDouble(long offset, double value) {
        return setVolatileLong("writeVolatileDouble", offset, Double.doubleToRawLongBits(value));
    }

    private SegmentBytesStore setVolatileInt(String operation, long offset, int value) {
        MemorySegment s = w();
        long at = at(offset, 4);
        try {
            INT_ATOMIC.setVolatile(s, at, value);
        } catch (IllegalArgumentException e) {
            throw misaligned(operation, offset, 4, e);
        }
        return this;
    }

    private SegmentBytesStore setVolatileLong(String operation, long offset, long value) {
        MemorySegment s = w();
        long at = at(offset, 8);
        try {
            LONG_ATOMIC.setVolatile(s, at, value);
        } catch (IllegalArgumentException e) {
            throw misaligned(operation, offset, 8, e);
        }
        return this;
    }

    @Override
    public boolean compareAndSwapInt(long offset, int expected, int value) {
        return swapInt("compareAndSwapInt", offset, expected, value);
    }

    @Override
    public boolean compareAndSwapLong(long offset, long expected, long value) {
        return swapLong("compareAndSwapLong", offset, expected, value);
    }

    /** The CAS of the raw bits, as Chronicle's default; here so that a misaligned one is said of this operation. */
    @Override
    public boolean compareAndSwapFloat(long offset, float expected, float value) {
        return swapInt("compareAndSwapFloat", offset, Float.floatToRawIntBits(expected), Float.floatToRawIntBits(value));
    }

    /** The CAS of the raw bits, as Chronicle's default; here so that a misaligned one is said of this operation. */
    @Override
    public boolean compareAndSwapDouble(long offset, double expected, double value) {
        return swapLong("compareAndSwapDouble", offset, Double.doubleToRawLongBits(expected), Double.doubleToRawLongBits(value));
    }

    private boolean swapInt(String operation, long offset, int expected, int value) {
        MemorySegment s = w();
        long at = at(offset, 4);
        faultBeforeSwap(s, at);
        try {
            return INT_ATOMIC.compareAndSet(s, at, expected, value);
        } catch (IllegalArgumentException e) {
            throw misaligned(operation, offset, 4, e);
        }
    }

    private boolean swapLong(String operation, long offset, long expected, long value) {
        MemorySegment s = w();
        long at = at(offset, 8);
        faultBeforeSwap(s, at);
        try {
            return LONG_ATOMIC.compareAndSet(s, at, expected, value);
        } catch (IllegalArgumentException e) {
            throw misaligned(operation, offset, 8, e);
        }
    }

    /**
     * Reads the first byte of the word a compare-and-swap is about to swap, so that a page a peer
     * truncated (a posix chunk is a file any same-user process may shrink) faults here: this read
     * throws the JVM's {@code InternalError}, as every read through the view does, where the CAS,
     * when the interpreter runs it, is not guarded and kills the JVM with {@code SIGBUS}
     * (docs/decisions.md, "SIGBUS on a truncated posix mapping"). An aligned word lies in one page;
     * a misaligned one never reaches memory (the CAS refuses it). A truncate between this read and
     * the CAS is the remaining window. Every CAS of the view's but the loops of
     * {@code addAndGetFloat/Double}, which read the word first themselves, goes through here
     * ({@code testAndSetInt} and Chronicle's {@code writeMax*} call {@link #compareAndSwapInt} or
     * {@link #compareAndSwapLong}); {@code addAndGetInt/Long} are a {@code getAndAdd}, which faults
     * as a read does.
     */
    private static void faultBeforeSwap(MemorySegment memory, long at) {
        memory.get(ValueLayout.JAVA_BYTE, at);
    }

    /** The CPU's atomic add; here, not Chronicle's loop of reads and CASes, so that a misaligned one is said of this operation. */
    @Override
    public int addAndGetInt(long offset, int adding) {
        MemorySegment s = w();
        long at = at(offset, 4);
        try {
            return (int) INT_ATOMIC.getAndAdd(s, at, adding) + adding;
        } catch (IllegalArgumentException e) {
            throw misaligned("addAndGetInt", offset, 4, e);
        }
    }

    /** The CPU's atomic add; here, not Chronicle's loop of reads and CASes, so that a misaligned one is said of this operation. */
    @Override
    public long addAndGetLong(long offset, long adding) {
        MemorySegment s = w();
        long at = at(offset, 8);
        try {
            return (long) LONG_ATOMIC.getAndAdd(s, at, adding) + adding;
        } catch (IllegalArgumentException e) {
            throw misaligned("addAndGetLong", offset, 8, e);
        }
    }

    /** Chronicle's loop of a volatile read and a CAS of the raw bits; here so that a misaligned one is said of this operation. */
    @Override
    public float addAndGetFloat(long offset, float adding) {
        MemorySegment s = w();
        long at = at(offset, 4);
        try {
            while (true) {
                int bits = (int) INT_ATOMIC.getVolatile(s, at);
                float sum = Float.intBitsToFloat(bits) + adding;
                if (INT_ATOMIC.compareAndSet(s, at, bits, Float.floatToRawIntBits(sum))) return sum;
            }
        } catch (IllegalArgumentException e) {
            throw misaligned("addAndGetFloat", offset, 4, e);
        }
    }

    /** Chronicle's loop of a volatile read and a CAS of the raw bits; here so that a misaligned one is said of this operation. */
    @Override
    public double addAndGetDouble(long offset, double adding) {
        MemorySegment s = w();
        long at = at(offset, 8);
        try {
            while (true) {
                long bits = (long) LONG_ATOMIC.getVolatile(s, at);
                double sum = Double.longBitsToDouble(bits) + adding;
                if (LONG_ATOMIC.compareAndSet(s, at, bits, Double.doubleToRawLongBits(sum))) return sum;
            }
        } catch (IllegalArgumentException e) {
            throw misaligned("addAndGetDouble", offset, 8, e);
        }
    }

    @Override
    public void testAndSetInt(long offset, int expected, int value) {
        if (!compareAndSwapInt(offset, expected, value)) {
            throw new IllegalStateException("int at offset " + offset + " of " + what + " was not " + expected);
        }
    }

    // ---------------------------------------------------------------- bulk

    @Override
    public SegmentBytesStore write(long offsetInRDO, byte[] bytes, int offset, int length) {
        MemorySegment.copy(bytes, offset, w(), ValueLayout.JAVA_BYTE, at(offsetInRDO, length), length);
        return this;
    }

    @Override
    public void write(long offsetInRDO, ByteBuffer bytes, int offset, int length) {
        MemorySegment target = w();
        MemorySegment.copy(MemorySegment.ofBuffer(bytes.duplicate().clear()), offset, target, at(offsetInRDO, length), length);
    }

    /**
     * Copies as {@code memmove} does, whatever the source: a range of the same memory arrives as it
     * was even where it overlaps the target (a record shifted right to make room before it). Only a
     * source over the same memory can overlap: a store of Conduit's (this one, another view of the
     * memory, or one under a Chronicle {@code Bytes}, which is what Chronicle passes), copied segment
     * to segment, or a Chronicle store with an address (one wrapping a {@code ByteBuffer} of the
     * region's segment), copied from its top down when the target is later in memory. Until
     * 2026-12-07 a {@code Bytes} source was copied forward 8 bytes at a time, so its first 8 bytes
     * came out repeated (ChronicleViewsTest#aRangeWrittenFromAViewToALaterOverlappingOffsetOfTheSameRegionArrivesIntact).
     */
    @Override
    public SegmentBytesStore write(long writeOffset, RandomDataInput bytes, long readOffset, long length) {
        MemorySegment target = w();
        long to = at(writeOffset, length);
        SegmentBytesStore store = segmentStoreOf(bytes);
        if (store != null) {
            MemorySegment.copy(store.m(), store.at(readOffset, length), target, to, length);
        } else if (overlapsBelow(bytes, readOffset, target, to, length)) {
            long i = length;
            for (; i >= 8; i -= 8) target.set(LONG, to + i - 8, bytes.readLong(readOffset + i - 8));
            for (; i > 0; i--) target.set(ValueLayout.JAVA_BYTE, to + i - 1, bytes.readByte(readOffset + i - 1));
        } else {
            long i = 0;
            for (; i + 8 <= length; i += 8) target.set(LONG, to + i, bytes.readLong(readOffset + i));
            for (; i < length; i++) target.set(ValueLayout.JAVA_BYTE, to + i, bytes.readByte(readOffset + i));
        }
        return this;
    }

    /**
     * The store of Conduit's that {@code source} reads, or {@code null}: the source itself, or the
     * store under a Chronicle {@code Bytes} ({@link AbstractBytes} reads its store at the offset it
     * is given, so the source's offsets are the store's).
     */
    private static SegmentBytesStore segmentStoreOf(RandomDataInput source) {
        if (source instanceof SegmentBytesStore store) return store;
        if (source instanceof AbstractBytes<?> bytes && bytes.bytesStore() instanceof SegmentBytesStore store) return store;
        return null;
    }

    /**
     * Whether {@code length} bytes of a source with an address, from {@code readOffset}, start
     * below the target's {@code to} and reach it, so that a forward copy would overwrite bytes
     * before it read them. Only an address says where a source's memory is: Conduit's own stores
     * have none ({@link #segmentStoreOf} takes them), and the rest are Chronicle's heap stores,
     * which share no memory with a native target.
     */
    private static boolean overlapsBelow(RandomDataInput source, long readOffset, MemorySegment target, long to, long length) {
        if (length == 0 || !target.isNative() || !source.isDirectMemory()) return false;
        long from = source.addressForRead(readOffset);
        long into = target.address() + to;
        return from < into && into < from + length;
    }

    @Override
    public void move(long from, long to, long length) {
        MemorySegment s = w();
        MemorySegment.copy(s, at(from, length), s, at(to, length), length);
    }

    /** Copies {@code length} bytes at {@code position} to Chronicle's native memory at {@code address} (Chronicle's own). */
    @Override
    public void nativeRead(long position, long address, long length) {
        MemorySegment s = m();
        long from = at(position, length);
        for (long i = 0; i < length; i++) UnsafeMemory.MEMORY.writeByte(address + i, s.get(ValueLayout.JAVA_BYTE, from + i));
    }

    /** Copies {@code length} bytes from Chronicle's native memory at {@code address} (Chronicle's own) to {@code position}. */
    @Override
    public void nativeWrite(long address, long position, long length) {
        MemorySegment s = w();
        long to = at(position, length);
        for (long i = 0; i < length; i++) s.set(ValueLayout.JAVA_BYTE, to + i, UnsafeMemory.MEMORY.readByte(address + i));
    }

    /** A stop-bit length, then the characters as ISO-8859-1 bytes: Chronicle's 8-bit string. */
    @Override
    public long write8bit(long position, String s, int start, int length) {
        fits(position, length);
        long at = BytesInternal.writeStopBit(this, position, length);
        MemorySegment target = w();
        long to = at(at, length);
        for (int i = 0; i < length; i++) target.set(ValueLayout.JAVA_BYTE, to + i, (byte) s.charAt(start + i));
        return at + length;
    }

    @Override
    public long write8bit(long position, BytesStore<?, ?> bs) {
        long length = bs.readRemaining();
        fits(position, length);
        long at = BytesInternal.writeStopBit(this, position, length);
        write(at, bs, bs.readPosition(), length);
        return at + length;
    }

    /**
     * Checks that an 8-bit string of {@code length} bytes, its stop-bit length first, fits at
     * {@code position}: checked piecemeal, one that did not fit threw only after its length was
     * written, leaving a length over bytes that were never written for a reader to find.
     */
    private void fits(long position, long length) {
        if (length >= 0) at(position, BytesUtil.stopBitLength(length) + length);
    }

    /**
     * Writes a number as text at {@code position}, as Chronicle's own stores do: the digits of
     * {@code mantissa} with a decimal point {@code exponent} digits from the right ("0." first when
     * there are none to its left and {@code append0}), a '-' if {@code negative}. Chronicle's
     * {@code Bytes.append(int/long/double)} leave this to the store (they have made sure the cursor
     * has room), and the interface's default throws {@link UnsupportedOperationException}. Written
     * backwards, then turned around, each byte through the checked accessors.
     *
     * @return how many bytes it wrote
     */
    @Override
    public long appendAndReturnLength(long position, boolean negative, long mantissa, int exponent, boolean append0) {
        long end = position;
        if (exponent <= 0) {
            if (append0) {
                writeByte(end++, (byte) '0');
                writeByte(end++, (byte) '.');
            }
            while (exponent++ < 0) writeByte(end++, (byte) '0');
            exponent = -1;
        }
        do {
            writeByte(end++, (byte) ('0' + mantissa % 10));
            mantissa /= 10;
            if (--exponent == 0) writeByte(end++, (byte) '.');
        } while (mantissa > 0 || exponent >= 0);
        if (negative) writeByte(end++, (byte) '-');
        for (long i = position, j = end - 1; i < j; i++, j--) {
            byte first = readByte(i);
            writeByte(i, readByte(j));
            writeByte(j, first);
        }
        return end - position;
    }

    @Override
    public String toString() {
        return "SegmentBytesStore[" + what + ", " + size + " bytes" + (open.getAsBoolean() ? "" : ", closed") + "]";
    }
}
