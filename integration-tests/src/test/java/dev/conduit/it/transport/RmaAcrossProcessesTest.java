package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.PeerRegion;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.Patterns;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * RMA against another process's memory: the child allocates regions from
 * {@code conduit.pool(plugin)} and exports their handles; this JVM opens them with
 * {@code endpoint.peerRegion(handle)} and puts, gets, fetch-adds and compare-and-swaps. The child
 * verifies: it checksums (CRC32C) its region on request, fills it with a pattern for gets, and
 * reads its words after atomics — and runs atomics of its own on the same word at the same time.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class RmaAcrossProcessesTest {

    private static final long[] SIZES = {1, 4096, 1 << 20, 16 << 20};
    private static final Duration GUARD = Duration.ofSeconds(120);

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void putAndGetOfEverySizeAreSeenByThePeer(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, plugin);
             Worker worker = conduit.newWorker(ThreadMode.SINGLE);
             Arena arena = Arena.ofConfined()) {
            WorkerAddress t = child.worker("t", plugin, "SINGLE");
            Endpoint ep = worker.connect(t);
            for (int i = 0; i < SIZES.length; i++) {
                long size = SIZES[i];
                String name = "r" + size;
                try (PeerRegion region = ep.peerRegion(child.region("t", name, size))) {
                    assertThat(region.size()).isEqualTo(size);
                    assertThat(region.plugin()).isEqualTo(plugin);

                    // put the whole region; the child's checksum of its memory is ours
                    MemorySegment local = arena.allocate(size, 64);
                    Patterns.fill(local, 10 + i);
                    ep.put(local, region, 0);
                    ep.flush();
                    assertThat(child.crc(name)).as("the child's CRC32C of %s after a put of %d bytes", name, size)
                            .isEqualTo(TransportPeer.crc(local));

                    // get what the child wrote, which is not what this JVM put (a get returning stale bytes fails)
                    long fillSeed = 21 + i;
                    assertThat(Patterns.firstMismatch(local, fillSeed)).as("first byte where the put's pattern differs from the child's fill")
                            .isNotEqualTo(-1);
                    child.fill(name, fillSeed);
                    MemorySegment got = arena.allocate(size, 64);
                    ep.get(region, 0, got);
                    assertThat(Patterns.firstMismatch(got, fillSeed)).as("first wrong byte of a get of %d bytes", size).isEqualTo(-1);

                    // a put and a get in the middle, at odd offsets
                    if (size >= 4096) {
                        long offset = size / 3 | 1;
                        long length = Math.min(size / 2, 100_003);
                        MemorySegment part = arena.allocate(length);
                        Patterns.fill(part, 30 + i);
                        ep.put(part, region, offset);
                        ep.flush();
                        MemorySegment.copy(part, 0, got, offset, length); // what the child's region must now hold
                        assertThat(child.crc(name)).as("the child's checksum after a put of %d bytes at %d", length, offset)
                                .isEqualTo(TransportPeer.crc(got));
                        MemorySegment back = arena.allocate(length);
                        ep.get(region, offset, back);
                        assertThat(Patterns.firstMismatch(back, 30 + i)).isEqualTo(-1);
                    }
                    assertThatThrownBy(() -> ep.put(arena.allocate(2), region, size - 1)).isInstanceOf(IndexOutOfBoundsException.class);
                }
            }
        }
    }

    /**
     * Atomics on a word of the child's region: compare-and-swap that succeeds and one that fails
     * (both return the witness), fetch-add; then this JVM fetch-adds one word a million times while
     * the child atomically adds to the same word a million times, both released by one flag: no increment is lost, and the
     * values this JVM's fetch-adds return rise strictly. The same race with compare-and-swap loops
     * on this side loses no increment either.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void atomicsOnAPeersWordAreAtomicAcrossProcesses(String plugin, @TempDir(factory = ShmDir.class) Path shared) throws Exception {
        try (RemoteTransportPeer child = RemoteTransportPeer.start(shared, Launcher.direct());
             Conduit conduit = Setup.conduit(shared, plugin);
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            WorkerAddress t = child.worker("t", plugin, "SINGLE");
            Endpoint ep = worker.connect(t);
            try (PeerRegion words = ep.peerRegion(child.region("t", "words", 4096))) {
                long w0 = child.word("words", 0);
                assertThat(ep.compareAndSwap(words, 0, w0, 100)).as("witness of a successful CAS").isEqualTo(w0);
                assertThat(child.word("words", 0)).isEqualTo(100);
                assertThat(ep.compareAndSwap(words, 0, 5, 7)).as("witness of a failed CAS").isEqualTo(100);
                assertThat(child.word("words", 0)).as("a failed CAS writes nothing").isEqualTo(100);

                long w8 = child.word("words", 8);
                assertThat(ep.fetchAdd(words, 8, 5)).isEqualTo(w8);
                assertThat(ep.fetchAdd(words, 8, -2)).isEqualTo(w8 + 5);
                assertThat(child.word("words", 8)).isEqualTo(w8 + 3);

                long count = 1_000_000;
                long base = child.word("words", 16);
                ep.compareAndSwap(words, 24, child.word("words", 24), 0);
                assertThat(child.word("words", 24)).as("the start flag").isZero();
                child.adder("add", "words", 16, count); // waits for the start flag at 24
                ep.fetchAdd(words, 24, 1); // go: both processes add at once
                long previous = Long.MIN_VALUE;
                boolean rising = true;
                for (long i = 0; i < count; i++) {
                    long v = ep.fetchAdd(words, 16, 1);
                    rising &= v > previous;
                    previous = v;
                }
                assertThat(child.join("add", GUARD)).containsEntry("added", Long.toString(count));
                assertThat(rising).as("values returned by this JVM's fetch-adds rise strictly").isTrue();
                assertThat(child.word("words", 16)).as("the word after %d adds from each process", count).isEqualTo(base + 2 * count);

                // Compare-and-swap under the same race: this JVM increments by CAS loops while the child adds.
                long casBase = child.word("words", 32);
                ep.compareAndSwap(words, 40, child.word("words", 40), 0);
                child.adder("cas", "words", 32, count); // waits for the start flag at 40
                ep.fetchAdd(words, 40, 1);
                long expected = casBase;
                long lost = 0;
                for (long i = 0; i < count; i++) {
                    while (true) {
                        long witness = ep.compareAndSwap(words, 32, expected, expected + 1);
                        if (witness == expected) {
                            expected++;
                            break;
                        }
                        lost++;
                        expected = witness;
                    }
                }
                assertThat(child.join("cas", GUARD)).containsEntry("added", Long.toString(count));
                Setup.report("%s: %d compare-and-swaps lost the race to the child's adds", plugin, lost);
                assertThat(child.word("words", 32)).as("the word after %d CAS increments and %d adds", count, count)
                        .isEqualTo(casBase + 2 * count);
                assertThat(words.size()).isEqualTo(4096);

                assertThatThrownBy(() -> ep.fetchAdd(words, 4, 1)).as("an unaligned word").isInstanceOf(IllegalArgumentException.class);
                assertThatThrownBy(() -> ep.compareAndSwap(words, 4096, 0, 1)).isInstanceOf(IndexOutOfBoundsException.class);
            }
        }
    }
}
