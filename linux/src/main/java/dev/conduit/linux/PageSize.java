package dev.conduit.linux;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The kernel's page size: the granularity of {@code mmap} offsets and lengths and of tmpfs memory,
 * and so the size and alignment unit of chunks that plugins map.
 *
 * <p>Read once from the ELF auxiliary vector the kernel gave this process
 * ({@code /proc/self/auxv}, entry {@code AT_PAGESZ}), which is what {@code sysconf(_SC_PAGESIZE)}
 * returns. Where {@code /proc} cannot be read, {@value #FALLBACK} is used: right on x86-64 and
 * on aarch64 kernels with 4 KiB pages; on an aarch64 kernel with 16 or 64 KiB pages a chunk
 * offset that is a multiple of 4 KiB but not of the real page is refused by {@code mmap}
 * ({@code EINVAL}), so such a system needs {@code /proc} mounted.
 */
public final class PageSize {

    /** The smallest page size of the supported architectures. */
    public static final long FALLBACK = 4096;

    /** Auxiliary vector entry types ({@code <elf.h>}). */
    private static final long AT_NULL = 0;
    private static final long AT_PAGESZ = 6;

    private static final long VALUE = read();

    private PageSize() {
    }

    /** The page size of this process, a power of two. */
    public static long get() {
        return VALUE;
    }

    private static long read() {
        try {
            return fromAuxiliaryVector(Files.readAllBytes(Path.of("/proc/self/auxv")));
        } catch (IOException | SecurityException e) {
            return FALLBACK;
        }
    }

    /**
     * {@code AT_PAGESZ} from an auxiliary vector: pairs of native 64-bit words (type, value), ended
     * by {@code AT_NULL}. {@link #FALLBACK} if the entry is missing or not a power of two.
     */
    public static long fromAuxiliaryVector(byte[] auxv) {
        ByteBuffer entries = ByteBuffer.wrap(auxv).order(ByteOrder.nativeOrder());
        while (entries.remaining() >= 2 * Long.BYTES) {
            long type = entries.getLong();
            long value = entries.getLong();
            if (type == AT_NULL) break;
            if (type == AT_PAGESZ) {
                return value >= FALLBACK && Long.bitCount(value) == 1 ? value : FALLBACK;
            }
        }
        return FALLBACK;
    }
}
