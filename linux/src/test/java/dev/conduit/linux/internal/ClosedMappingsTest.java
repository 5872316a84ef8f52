package dev.conduit.linux.internal;

import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static dev.conduit.linux.MmapFlags.MAP_SHARED;
import static dev.conduit.linux.MmapFlags.PROT_READ;
import static dev.conduit.linux.MmapFlags.PROT_WRITE;
import static dev.conduit.linux.ProcessMaps.mappingAt;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What a closed mapping's range does until it is unmapped: an access that outlives the arena's
 * close (as one the JDK's close handshake missed does, JDK-8364167) faults with an
 * {@link InternalError} instead of reaching unmapped memory, which would kill the JVM.
 *
 * <p>The tests reach the range through a segment of the global scope, which the arena's close
 * does not invalidate: the stand-in for a thread the handshake missed.
 */
class ClosedMappingsTest {
    private static final long SIZE = 64 * 1024;
    private static final String PLACEHOLDER = "memfd:" + ClosedMappings.PLACEHOLDER_NAME;

    private final Libc libc = Linux.libc();

    /** Where the reads' sum goes, so that the JIT cannot drop them as unused. */
    private static volatile long sink;

    @Test
    void aClosedMappingsRangeFaultsOnAccessUntilItIsUnmappedAfterTheGrace() throws Exception {
        for (int tries = 1; !aClosedRangeFaultsUntilItIsUnmapped(); tries++) {
            assertThat(tries).as("tries that this thread came to a read of too late after the close").isLessThan(10);
        }
    }

    /**
     * Closes a mapping, reads its range while it is held, and waits for its unmap. Returns false, having read no more,
     * when this thread came to a read later than half the grace after the close (a loaded machine kept it off the
     * processor, or its faults, each a signal, were slow): past the grace the range is unmapped and a read crashes the JVM.
     */
    private boolean aClosedRangeFaultsUntilItIsUnmapped() throws Exception {
        Arena arena = Arena.ofShared();
        long address = mapWithSevenAtZero("conduit-closed-test", arena);
        MemorySegment outlived = everything(address);
        assertThat(outlived.get(JAVA_LONG, 0)).isEqualTo(7);

        // From before the close, in which the range's grace begins: counted from after it, a thread descheduled right
        // after the close read past the grace.
        long stopReading = System.nanoTime() + ClosedMappings.GRACE_NANOS / 2;
        arena.close();

        String maps = Files.readString(Path.of("/proc/self/maps"));
        assertThat(maps).as("the file's pages are released at the close").doesNotContain("memfd:conduit-closed-test");
        String held = mappingAt(address);
        if (System.nanoTime() - stopReading >= 0) return false; // else the line was read inside the grace
        assertThat(held).as("the range is held by the placeholder").contains(PLACEHOLDER);
        if (System.nanoTime() - stopReading >= 0) return false;
        assertThatThrownBy(() -> outlived.get(JAVA_LONG, 0)).isInstanceOf(InternalError.class)
                .hasMessageContaining("unsafe memory access");
        if (System.nanoTime() - stopReading >= 0) return false;
        assertThatThrownBy(() -> outlived.set(JAVA_LONG, SIZE - 8, 1)).isInstanceOf(InternalError.class)
                .hasMessageContaining("unsafe memory access");
        // Often enough for the JIT to compile the loop. Compiled code raises the fault at a later
        // safepoint check, not at the read, so the catch covers the whole loop.
        long faults = 0;
        long sum = 0;
        int attempts = 0;
        while (attempts < 20_000 && System.nanoTime() - stopReading < 0) {
            try {
                while (attempts < 20_000 && ((attempts & 63) != 0 || System.nanoTime() - stopReading < 0)) {
                    attempts++;
                    for (int i = 0; i < 10; i++) sum += outlived.get(JAVA_LONG, i * 8L);
                }
            } catch (InternalError e) {
                faults++;
            }
        }
        sink = sum;
        if (attempts == 0) return false;
        assertThat(faults).as("the JVM survives every fault").isPositive();

        assertThat(placeholderGoneFrom(address)).as("the range is unmapped once the grace is over").isTrue();
        return true;
    }

    @Test
    void anAccessOnAnotherThreadThatOutlivesTheCloseFaultsInsteadOfCrashingTheJvm() throws Exception {
        // A round counts when the reader read after the close was known (after closed's count down); one whose reader
        // ran out of time first (this thread kept off the processor after the close) is made again, a few times at most.
        for (int round = 0, counted = 0; counted < 20; round++) {
            assertThat(round).as("rounds, %d of which counted", counted).isLessThan(40);
            Arena arena = Arena.ofShared();
            long address = mapWithSevenAtZero("conduit-closed-race", arena);
            MemorySegment outlived = everything(address);
            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch closed = new CountDownLatch(1);
            // As above: the reads stop well inside the grace, counted from before the close, whatever the machine's load.
            AtomicLong stopReading = new AtomicLong(Long.MAX_VALUE);
            AtomicLong readsAfterClose = new AtomicLong();
            AtomicLong faults = new AtomicLong();
            AtomicReference<Throwable> other = new AtomicReference<>();
            Thread reader = Thread.ofPlatform().start(() -> {
                reading.countDown();
                long sum = 0; // used, so that the JIT keeps every read
                try {
                    while (readsAfterClose.get() < 1_000 && System.nanoTime() - stopReading.get() < 0) {
                        try {
                            while (readsAfterClose.get() < 1_000 && System.nanoTime() - stopReading.get() < 0) {
                                if (closed.getCount() == 0) readsAfterClose.incrementAndGet();
                                sum += outlived.get(JAVA_LONG, 0);
                            }
                        } catch (InternalError e) {
                            // In compiled code the fault is thrown at the next safepoint check, not
                            // at the read itself: this catch covers the whole loop.
                            faults.incrementAndGet();
                        }
                    }
                    sink = sum;
                } catch (Throwable t) {
                    other.set(t);
                }
            });
            reading.await();
            stopReading.set(System.nanoTime() + ClosedMappings.GRACE_NANOS / 2);
            arena.close();
            closed.countDown();
            reader.join();
            assertThat(other.get()).isNull();
            if (readsAfterClose.get() == 0) continue;
            counted++;
            assertThat(faults.get()).as("round " + round).isPositive();
        }
    }

    @Test
    void pastMaxHeldTheOldestRangeIsUnmappedAtOnce() {
        List<Long> unmapped = new CopyOnWriteArrayList<>();
        ClosedMappings closed = new ClosedMappings(TimeUnit.HOURS.toNanos(1), 3, (address, length) -> unmapped.add(address));

        for (long address = 1; address <= 3; address++) closed.hold(address << 12, 4096);
        assertThat(unmapped).isEmpty();
        closed.hold(4 << 12, 4096);

        assertThat(unmapped).containsExactly(1L << 12);
        assertThat(closed.heldCount()).isEqualTo(3);
    }

    /**
     * The unmapper unmaps each range once its grace is over, oldest first, ends once nothing is held, and the next hold
     * starts another. Each unmap waits for a permit the test gives: the test asserted that the thread was running right
     * after two holds, and again after the third, with nothing to stop it from unmapping everything and ending first, so
     * a test thread descheduled for the 50 ms grace (a loaded machine) saw no thread running.
     */
    @Test
    void rangesAreUnmappedOldestFirstAfterTheGraceAndThenTheUnmapperThreadEnds() throws Exception {
        List<Long> unmapped = new CopyOnWriteArrayList<>();
        Semaphore unmapsAllowed = new Semaphore(0);
        ClosedMappings closed = new ClosedMappings(TimeUnit.MILLISECONDS.toNanos(50), 10, (address, length) -> {
            unmapsAllowed.acquireUninterruptibly();
            unmapped.add(address);
        });
        try {
            closed.hold(1 << 12, 4096);
            closed.hold(2 << 12, 4096);
            assertThat(closed.unmapperRunning()).as("the unmapper, which cannot end before the test lets it unmap").isTrue();

            unmapsAllowed.release(2);
            awaitUnmapperEnd(closed);
            assertThat(unmapped).containsExactly(1L << 12, 2L << 12);
            assertThat(closed.heldCount()).isZero();

            closed.hold(3 << 12, 4096);
            assertThat(closed.unmapperRunning()).as("and a new one starts with the next range").isTrue();
        } finally {
            unmapsAllowed.release(Integer.MAX_VALUE / 2); // no unmapper thread stays waiting for a permit
        }
    }

    @Test
    void anUnmapperThreadEndedByAnErrorIsReplacedByTheNextHold() throws Exception {
        List<Long> unmapped = new CopyOnWriteArrayList<>();
        ClosedMappings closed = new ClosedMappings(0, 10, (address, length) -> {
            if (address == 1 << 12) throw new IllegalStateException("a stand-in for a logger's exception while unmapping");
            unmapped.add(address);
        });

        closed.hold(1 << 12, 4096);
        awaitUnmapperEnd(closed);
        assertThat(closed.unmapperRunning()).as("the thread the error ended").isFalse();

        closed.hold(2 << 12, 4096);
        awaitUnmapperEnd(closed);
        assertThat(unmapped).containsExactly(2L << 12);
    }

    /**
     * Waits until {@code closed} has no unmapper thread running, and fails if it still has one after a minute: a hang guard
     * (the thread ends within a scheduling delay of its last range's grace), not a speed check.
     */
    private static void awaitUnmapperEnd(ClosedMappings closed) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
        while (closed.unmapperRunning() && System.nanoTime() - deadline < 0) {
            Thread.sleep(10);
        }
        assertThat(closed.unmapperRunning()).as("the unmapper thread ended within the hang guard of a minute").isFalse();
    }

    /** Maps {@link #SIZE} bytes of a new memfd named {@code name} in {@code arena}, writes 7 at offset 0, and returns the address. */
    private long mapWithSevenAtZero(String name, Arena arena) {
        try (FileDescriptor memfd = libc.memfdCreate(name, 0)) {
            libc.ftruncate(memfd, SIZE);
            MemorySegment mapping = libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, arena);
            mapping.set(JAVA_LONG, 0, 7);
            return mapping.address();
        }
    }

    @SuppressWarnings("restricted") // the stand-in for an access the close handshake missed
    private static MemorySegment everything(long address) {
        return MemorySegment.ofAddress(address).reinterpret(SIZE);
    }

    /** Whether the placeholder left {@code address} within a minute: a hang guard over the grace of a second, not a speed check. */
    private static boolean placeholderGoneFrom(long address) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
        while (System.nanoTime() - deadline < 0) {
            String line = mappingAt(address);
            if (line == null || !line.contains(PLACEHOLDER)) return true;
            Thread.sleep(20);
        }
        return false;
    }
}
