package dev.conduit.plugin.memfd;

import dev.conduit.shm.HugePages;
import dev.conduit.shm.Meminfo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Sizes the kernel's huge page pool ({@code /proc/sys/vm/nr_hugepages}, root only) so that a test
 * finds a number of pages free, and gives the pool back its previous size when closed. The kernel
 * may grant fewer pages than asked (memory too fragmented): {@link #free()} says how many there
 * are, for the test to expect a clean refusal instead. Pages other processes hold stay theirs.
 */
final class HugePageReservation implements AutoCloseable {
    private final long previous;

    private HugePageReservation(long previous) {
        this.previous = previous;
    }

    /** Resizes the pool so that {@code pages} pages are free (if the kernel grants them), beside those in use now. */
    static HugePageReservation withFree(long pages) {
        HugePages now = HugePages.read(Meminfo.PATH);
        long previous = now.total();
        write(Math.max(0, now.total() - now.free()) + pages);
        return new HugePageReservation(previous);
    }

    /** {@code HugePages_Free} now. */
    long free() {
        return HugePages.read(Meminfo.PATH).free();
    }

    @Override
    public void close() {
        write(previous);
    }

    private static void write(long pages) {
        try {
            Files.writeString(HugePages.NR_HUGEPAGES, Long.toString(pages));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot size the huge page pool (" + HugePages.NR_HUGEPAGES + "; root only)", e);
        }
    }

    /** The {@code KernelPageSize} line of the mapping that starts at {@code segment}, from {@code /proc/self/smaps}. */
    static String kernelPageSizeOf(MemorySegment segment) {
        String start = Long.toHexString(segment.address()) + "-";
        try {
            List<String> smaps = Files.readAllLines(Path.of("/proc/self/smaps"));
            boolean inMapping = false;
            for (String line : smaps) {
                if (line.matches("[0-9a-f]+-[0-9a-f]+ .*")) {
                    inMapping = line.startsWith(start);
                } else if (inMapping && line.startsWith("KernelPageSize:")) {
                    return line.replaceAll("\\s+", " ");
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new AssertionError("no mapping starts at " + start + " in /proc/self/smaps");
    }
}
