package dev.conduit.chronicle;

import dev.conduit.ImportedRegion;
import dev.conduit.Region;
import dev.conduit.chronicle.internal.ChronicleFlags;
import dev.conduit.chronicle.internal.SegmentBytesStore;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Chronicle Bytes views of Conduit's shared memory: zero-copy (they read and write the region's
 * own memory, which other processes map too), bounded by the region, and refusing use once the
 * region is closed.
 *
 * <ul>
 *   <li><b>Bounds</b>: a {@link Bytes} view's capacity, write limit and read limit are the
 *       region's size, so every cursor and random access is checked by Chronicle against them
 *       ({@code BufferOverflowException}/{@code BufferUnderflowException}); its
 *       {@link Bytes#bytesStore() store}, and the store {@link #store} returns, check every access
 *       against the region's segment ({@link IndexOutOfBoundsException}). No access goes through a
 *       raw address.</li>
 *   <li><b>Close</b>: every access first checks that the region is open
 *       ({@link Region#isOpen()}); after {@code close()} it throws {@link IllegalStateException},
 *       as does the view of an {@code ImportedRegion} reopened since on another region.
 *       An access racing with {@code close()} on another thread may still complete; it never
 *       touches unmapped memory: a {@code Region}'s memory stays mapped until its pool closes
 *       (one with a chunk of its own, until it closes), an {@code ImportedRegion}'s until the
 *       cache unmaps it, and every unmap closes a shared
 *       arena, which the JVM completes only between accesses (later ones throw).</li>
 *   <li><b>Atomics</b>: {@code compareAndSwapInt/Long}, {@code readVolatile*},
 *       {@code writeVolatile*}, {@code writeOrdered*} are the CPU's atomic instructions on the
 *       shared memory, so they work between processes; they need a naturally aligned offset
 *       (a misaligned one throws {@link IllegalArgumentException} naming the view, the offset and
 *       the remedy).</li>
 * </ul>
 *
 * <p>A view starts with the whole region readable ({@code readPosition} 0, {@code readLimit} =
 * {@code writeLimit} = size). To write from the start with the cursor, call {@code clear()}
 * first. Byte order is the platform's (Chronicle's), as with {@code MemorySegment}'s
 * {@code JAVA_*} layouts. Views are as thread-safe as Chronicle's {@code Bytes}: one cursor per
 * thread; the memory itself is shared. A view may be made on one thread and used on another:
 * Chronicle's single-thread check (active with assertions) ties it to the first thread that uses it.
 */
public final class ChronicleViews {

    private ChronicleViews() {
    }

    /** A cursor view of {@code region}, all of it readable (see the class description). */
    public static Bytes<Void> bytes(Region region) {
        return readable(store(region));
    }

    /**
     * A cursor view of an imported region, all of it readable. Of one a plugin could map only for
     * reading here ({@code region.segment().isReadOnly()}), {@code readWrite()} is {@code false} and
     * a write throws {@link IllegalArgumentException}.
     */
    public static Bytes<Void> bytes(ImportedRegion region) {
        return readable(store(region));
    }

    /** A random-access view of {@code region}: offsets from 0 to {@code region.size()}. */
    public static BytesStore<?, Void> store(Region region) {
        Objects.requireNonNull(region, "region");
        // On every call, before a Chronicle class initializes: without its flags that failed naming neither flag nor
        // remedy, and later calls with NoClassDefFoundError.
        ChronicleFlags.require();
        return new SegmentBytesStore(region.segment(), region::isOpen, "a Region of " + region.size() + " bytes", true);
    }

    /**
     * A random-access view of an imported region. It stays the view of the region it was made of:
     * once {@code conduit.importRegion(handle, region)} reopens that object on another region, the
     * view throws as after a close (a reopen on the same memory keeps it working).
     */
    public static BytesStore<?, Void> store(ImportedRegion region) {
        Objects.requireNonNull(region, "region");
        ChronicleFlags.require();
        MemorySegment viewed = region.segment();
        return new SegmentBytesStore(viewed, () -> region.isOpen() && sameMemory(region.segment(), viewed),
                "an ImportedRegion of " + region.size() + " bytes (plugin " + region.plugin() + ")", true);
    }

    /**
     * Whether {@code now}, what a reopened region views, is the memory {@code viewed} is. Compared by
     * address and size: another mapping can take the address only once {@code viewed}'s is gone, and
     * then every access through {@code viewed} throws on its closed arena anyway.
     */
    private static boolean sameMemory(MemorySegment now, MemorySegment viewed) {
        return now.address() == viewed.address() && now.byteSize() == viewed.byteSize();
    }

    private static Bytes<Void> readable(BytesStore<?, Void> store) {
        Bytes<Void> bytes = store.bytesForWrite();
        bytes.readPositionRemaining(0, store.capacity());
        // Setting the limits tied the view to the thread that made it (Chronicle's check, active with assertions):
        // a view made once at startup and handed to the thread that uses it threw ThreadingIllegalStateException
        // on its first access, where a Bytes of Chronicle's own store, fresh from bytesForWrite(), did not.
        bytes.singleThreadedCheckReset();
        return bytes;
    }
}
