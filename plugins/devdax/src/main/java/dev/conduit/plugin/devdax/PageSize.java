package dev.conduit.plugin.devdax;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The kernel's page size: the unit in which a regular file is mapped (offsets and lengths of
 * {@code mmap}), and the least alignment {@code devdax.file.align} may ask for.
 *
 * <p>Read once from the ELF auxiliary vector the kernel gave this process
 * ({@code /proc/self/auxv}, entry {@code AT_PAGESZ}), which is what {@code sysconf(_SC_PAGESIZE)}
 * returns. Where {@code /proc} cannot be read, {@value #FALLBACK}: the smallest page size of the
 * supported architectures, so a mapping may then fail with {@code EINVAL} on a kernel with larger
 * pages, but never silently maps the wrong range.
 */
final class PageSize {

    static final long FALLBACK = 4096;

    /** Auxiliary vector entry types ({@code <elf.h>}). */
    private static final long AT_NULL = 0;
    private static final long AT_PAGESZ = 6;

    private static final long VALUE = read();

    private PageSize() {
    }

    /** The page size of this process, a power of two. */
    static long get() {
        return VALUE;
    }

    private static long read() {
        try {
            return fromAuxiliaryVector(Files.readAllBytes(Path.of("/proc/self/auxv")));
        } catch (IOException | SecurityException e) {
            return FALLBACK;
        }
    }

    /** {@code AT_PAGESZ} from an auxiliary vector (pairs of native 64-bit words, ended by {@code AT_NULL}); {@link #FALLBACK} if absent. */
    static long fromAuxiliaryVector(byte[] auxv) {
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
