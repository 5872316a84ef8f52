package dev.conduit.linux;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.conduit.linux.MemfdFlags.MFD_ALLOW_SEALING;
import static dev.conduit.linux.MmapFlags.MAP_SHARED;
import static dev.conduit.linux.MmapFlags.PROT_READ;
import static dev.conduit.linux.MmapFlags.PROT_WRITE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** futex and eventfd: the shared-memory transport's wakeup paths. No test asserts a duration. */
class WaitTest {
    private static final long SIZE = 4096;
    private static final long WORD = 64;

    private final Libc libc = Linux.libc();

    /** Rounded up, so that a wait never ends early; capped at what poll takes, never overflowing into "without limit". */
    @Test
    void aWaitBecomesPollsMillisecondsRoundedUpAndCapped() {
        assertThat(Libc.pollTimeoutMillis(-5)).isZero();
        assertThat(Libc.pollTimeoutMillis(0)).isZero();
        assertThat(Libc.pollTimeoutMillis(1)).isEqualTo(1);
        assertThat(Libc.pollTimeoutMillis(1_000_001)).isEqualTo(2);
        assertThat(Libc.pollTimeoutMillis(Long.MAX_VALUE)).isEqualTo(Integer.MAX_VALUE);
        assertThat(Libc.pollTimeoutMillis(Long.MAX_VALUE - 1)).isEqualTo(Integer.MAX_VALUE);
    }

    @Test
    void wakeThroughOneMappingReachesAWaiterOnAnother() throws Exception {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-futex", MFD_ALLOW_SEALING);
             Arena arena = Arena.ofShared()) {
            libc.ftruncate(memfd, SIZE);
            // Two mappings of one file stand in for two processes: only a shared futex pairs them.
            MemorySegment waiterView = libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, arena);
            MemorySegment wakerView = libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, arena);

            CompletableFuture<FutexResult> waiter = CompletableFuture.supplyAsync(
                    () -> libc.futexWait(waiterView, WORD, 0, -1), Thread::startVirtualThread);
            // The word stays 0, so the waiter can only return once a wake reached it sleeping.
            while (libc.futexWake(wakerView, WORD, 1) == 0) {
                Thread.sleep(1);
            }
            assertThat(waiter.get(1, TimeUnit.MINUTES)).isEqualTo(FutexResult.WOKEN);
        }
    }

    @Test
    void waiterLoopsUntilTheWordChanges() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment word = arena.allocate(JAVA_INT);
            Thread waiter = Thread.ofPlatform().start(() -> {
                while (word.getAtIndex(JAVA_INT, 0) == 0) {
                    libc.futexWait(word, 0, 0, -1);
                }
            });
            word.setAtIndex(JAVA_INT, 0, 1);
            libc.futexWake(word, 0, Integer.MAX_VALUE);
            waiter.join(TimeUnit.MINUTES.toMillis(1));
            assertThat(waiter.isAlive()).isFalse();
        }
    }

    @Test
    void waitTimesOutWhenNobodyWakes() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment word = arena.allocate(JAVA_INT);
            assertThat(libc.futexWait(word, 0, 0, TimeUnit.MILLISECONDS.toNanos(1))).isEqualTo(FutexResult.TIMED_OUT);
            assertThat(libc.futexWait(word, 0, 0, 0)).isEqualTo(FutexResult.TIMED_OUT);
        }
    }

    /**
     * A zero timeout is a look at the word. FUTEX_WAIT given one put the thread to sleep on a timer
     * every time, deferred by the timer slack: a voluntary context switch per call (and about 70 us).
     */
    @Test
    void aZeroTimeoutLooksAtTheWordWithoutSleeping() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment word = arena.allocate(JAVA_INT);
            int calls = 1000;
            long switchesBefore = voluntaryContextSwitchesOfThisThread();
            for (int i = 0; i < calls; i++) {
                assertThat(libc.futexWait(word, 0, 0, 0)).isEqualTo(FutexResult.TIMED_OUT);
                assertThat(libc.futexWait(word, 0, 1, 0)).isEqualTo(FutexResult.VALUE_MISMATCH);
            }
            // A few for safepoints and the like; the sleeping wait made one per call.
            assertThat(voluntaryContextSwitchesOfThisThread() - switchesBefore).as("voluntary context switches").isLessThan(calls / 10);
        }
    }

    /** The kernel counts a woken waiter before it compares with the count: a wake of 0 used to wake one. */
    @Test
    void aWakeOfNoneIsRefusedRatherThanWakingOne() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment word = arena.allocate(JAVA_INT);
            for (int count : new int[] {0, -1}) {
                assertThatThrownBy(() -> libc.futexWake(word, 0, count)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("futex wake of " + count + " waiters").hasMessageContaining("positive count");
            }
        }
    }

    /**
     * A wait through a heap segment is refused (FFM passes no heap memory to the kernel). Until
     * 2026-12-07 a wake through one passed the array offset as an address, found no page there
     * (EFAULT) and answered "0 woken" as for closed memory: a wake that reached nobody, silently.
     */
    @Test
    void aWakeThroughAHeapSegmentIsRefusedAsAWaitThroughOneIs() {
        MemorySegment heap = MemorySegment.ofArray(new int[2]);
        assertThatThrownBy(() -> libc.futexWait(heap, 0, 0, TimeUnit.MILLISECONDS.toNanos(1)))
                .as("a wait through a heap segment").isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> libc.futexWake(heap, 0, 1))
                .as("a wake through a heap segment").isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("heap segment").hasMessageContaining("put the futex word in native memory");
    }

    /** The kernel refuses a misaligned futex word with a bare EINVAL; the check before it names the offset. */
    @Test
    void aFutexWordThatIsNotFourByteAlignedIsRefusedNamingItsOffset() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment words = arena.allocate(2 * JAVA_INT.byteSize(), JAVA_INT.byteAlignment());
            assertThatThrownBy(() -> libc.futexWait(words, 2, 0, TimeUnit.MILLISECONDS.toNanos(1)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("futex word at offset 2 of").hasMessageContaining("is not 4-byte aligned");
            assertThatThrownBy(() -> libc.futexWake(words, 2, 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("futex word at offset 2 of").hasMessageContaining("is not 4-byte aligned");
        }
    }

    private static long voluntaryContextSwitchesOfThisThread() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/thread-self/status"))) {
            if (line.startsWith("voluntary_ctxt_switches:")) {
                return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        throw new AssertionError("no voluntary_ctxt_switches in /proc/thread-self/status");
    }

    @Test
    void waitReturnsAtOnceWhenTheWordDiffers() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment word = arena.allocate(JAVA_INT);
            word.set(JAVA_INT, 0, 5);
            assertThat(libc.futexWait(word, 0, 4, -1)).isEqualTo(FutexResult.VALUE_MISMATCH);
            assertThat(libc.futexWake(word, 0, 1)).isZero();
        }
    }

    /**
     * A wake holds no arena: the woken thread may close the memory while the waker is still
     * returning from the kernel (a worker that closes as it wakes), and that close must not fail.
     * A wake of a word whose mapping closed wakes nobody.
     */
    @Test
    void aWakeKeepsNoArenaInUseAndAWakeOfClosedMemoryWakesNobody() throws Exception {
        try (FileDescriptor memfd = libc.memfdCreate("conduit-futex-close", MFD_ALLOW_SEALING)) {
            libc.ftruncate(memfd, SIZE);
            Arena arena = Arena.ofShared();
            MemorySegment mapping = libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, arena);
            CompletableFuture<FutexResult> waiter = CompletableFuture.supplyAsync(() -> {
                FutexResult woken = libc.futexWait(mapping, WORD, 0, -1);
                arena.close(); // failed with "Session is acquired" while the waker's call held the arena
                return woken;
            }, Thread::startVirtualThread);
            while (libc.futexWake(mapping, WORD, 1) == 0) {
                Thread.onSpinWait(); // the waiter is not asleep yet
            }
            assertThat(waiter.get(30, TimeUnit.SECONDS)).isEqualTo(FutexResult.WOKEN);

            assertThat(libc.futexWake(mapping, WORD, 1)).as("a wake of closed memory").isZero();
        }
    }

    @Test
    void futexWordMustBeAlignedAndInside() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment segment = arena.allocate(16, 8);
            assertThatThrownBy(() -> libc.futexWait(segment, 2, 0, 0)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> libc.futexWake(segment, 16, 1)).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    @Test
    void eventfdCountsAndSignals() {
        try (FileDescriptor eventfd = libc.eventfd(0, EventfdFlags.EFD_NONBLOCK)) {
            assertThat(libc.eventfdRead(eventfd)).as("empty, non-blocking").isZero();
            assertThat(libc.poll(eventfd, PollEvents.POLLIN, 0)).isZero();
            assertThat(libc.eventfdWrite(eventfd, 2)).isTrue();
            assertThat(libc.eventfdWrite(eventfd, 3)).isTrue();
            assertThat(libc.poll(eventfd, PollEvents.POLLIN, -1)).isEqualTo(PollEvents.POLLIN);
            assertThat(libc.eventfdRead(eventfd)).isEqualTo(5);
            assertThat(libc.eventfdRead(eventfd)).isZero();
            assertThat(libc.eventfdWrite(eventfd, 0xffff_ffff_ffff_fffeL)).isTrue();
            assertThat(libc.eventfdWrite(eventfd, 1)).as("would overflow").isFalse();
        }
    }

    @Test
    void eventfdSemaphoreHandsOutOneAtATime() {
        try (FileDescriptor eventfd = libc.eventfd(2, EventfdFlags.EFD_SEMAPHORE | EventfdFlags.EFD_NONBLOCK)) {
            assertThat(libc.eventfdRead(eventfd)).isEqualTo(1);
            assertThat(libc.eventfdRead(eventfd)).isEqualTo(1);
            assertThat(libc.eventfdRead(eventfd)).isZero();
        }
    }

    @Test
    void blockingEventfdWakesAReader() throws Exception {
        try (FileDescriptor eventfd = libc.eventfd(0, 0)) {
            CompletableFuture<Long> reader = CompletableFuture.supplyAsync(() -> libc.eventfdRead(eventfd));
            libc.eventfdWrite(eventfd, 7);
            assertThat(reader.get(1, TimeUnit.MINUTES)).isEqualTo(7);
        }
    }
}
