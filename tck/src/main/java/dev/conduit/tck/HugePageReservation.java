package dev.conduit.tck;

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
 * For tests of huge page chunks (memfd's {@code memfd.hugepages}, posix on a hugetlbfs mount),
 * which never skip for want of pages: they reserve them.
 */
public final class HugePageReservation implements AutoCloseable {
    private static final Path NR_HUGEPAGES = Path.of("/proc/sys/vm/nr_hugepages");
    private static final Path MEMINFO = Path.of("/proc/meminfo");

    private final long previous;

    private HugePageReservation(long previous) {
        this.previous = previous;
    }

    /**
     * Resizes the pool so that {@code pages} pages are free (if the kernel grants them), beside those
     * in use or reserved now. The size given back on close is {@code nr_hugepages}'s, not
     * {@code HugePages_Total}, which counts surplus pages too: written back, the kernel would make
     * those persistent and the pool would stay larger once their mappings end.
     */
    public static HugePageReservation withFree(long pages) {
        long previous = read();
        write(Math.max(0, meminfo("HugePages_Total:") - free(meminfo("HugePages_Free:"), meminfo("HugePages_Rsvd:"))) + pages);
        return new HugePageReservation(previous);
    }

    /**
     * The pages a new mapping may take now: {@code HugePages_Free} less {@code HugePages_Rsvd}, pages
     * that mappings made already reserved and have not touched yet, which {@code HugePages_Free} still
     * counts but the kernel will not give to another.
     */
    public long free() {
        return free(meminfo("HugePages_Free:"), meminfo("HugePages_Rsvd:"));
    }

    private static long free(long free, long reserved) {
        return Math.max(0, free - reserved);
    }

    private static long meminfo(String field) {
        try {
            return Files.readAllLines(MEMINFO).stream().filter(line -> line.startsWith(field))
                    .mapToLong(line -> Long.parseLong(line.substring(field.length()).trim().split("\\s+")[0])).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no " + field + " in " + MEMINFO + ": a kernel without huge pages"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        write(previous);
    }

    private static long read() {
        try {
            return Long.parseLong(Files.readString(NR_HUGEPAGES).trim());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the huge page pool's size (" + NR_HUGEPAGES + ")", e);
        }
    }

    private static void write(long pages) {
        try {
            Files.writeString(NR_HUGEPAGES, Long.toString(pages));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot size the huge page pool (" + NR_HUGEPAGES + "; root only)", e);
        }
    }

    /** The {@code KernelPageSize} line of the mapping that starts at {@code segment}, from {@code /proc/self/smaps}. */
    public static String kernelPageSizeOf(MemorySegment segment) {
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
