package dev.conduit.shm;

import dev.conduit.linux.Linux;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PeerFailedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/** A connect to a peer that dies while the connect imports its receive queue. */
class ShmTransportConnectTest {

    @TempDir
    Path shared;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    private static final MessageSink NO_MESSAGES = (id, h, ho, hl, p, po, pl) -> {
        throw new AssertionError("no message is sent");
    };

    /**
     * A peer killed after the connect found its lease held fails the import of its queue (over
     * memfd: "producer gone", its fd server's socket reset). The connect says the peer died, as a
     * {@link PeerFailedException}, which a handler answering through {@code replyEndpoint()}
     * catches for a sender's death; it threw the importer's plain {@link ConduitException}, which
     * left such a handler through {@code progress()} (helper h12's soak, a sender killed every 30 s,
     * over memfd). Nothing of the peer stays mapped or watched.
     */
    @Test
    void aPeerThatDiesWhileItsQueueIsImportedIsAPeerFailure() throws Exception {
        ShmTransport peer = transport(new InProcessMemory());
        InProcessMemory memory = new InProcessMemory();
        int[] mapped = {0};
        IpcImporter dyingProducer = new IpcImporter() {
            @Override
            public ChunkMapping map(PayloadReader payload, long chunkLength) {
                mapped[0]++;
                peer.lease().close(); // releases its lease, as a killed process's exit does (an orderly close marks it closed)
                throw new ConduitException("producer gone (its socket reset the connection before answering)");
            }
        };
        ShmTransport connecting = transport(memory, dyingProducer);

        Throwable thrown = catchThrowable(() -> connecting.connect(new PayloadReader(peer.address()), cause -> { }));

        assertThat(mapped[0]).isEqualTo(1);
        assertThat(thrown).isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("test: the peer died while this worker connected to it (its lease conduit-test-")
                .hasMessageContaining("is no longer held): producer gone (its socket reset the connection before answering)")
                .hasCauseInstanceOf(ConduitException.class);
        assertThat(((PeerFailedException) thrown).reason()).isEqualTo(PeerFailedException.Reason.DIED);
        assertThat(leases()).as("only the connecting worker's lease is left").hasSize(1);
    }

    /**
     * A connect that lands in the last steps of the peer's orderly close, its receive queue freed
     * and its lease not yet released (the close of its memory provider and of its lease, which
     * lists the directory, lie between), finds the queue gone: that is the close, and the connect
     * says so as a {@link PeerFailedException} {@code CLOSED}, as it does for a queue it finds
     * marked closing. It threw the importer's plain {@link ConduitException} ("cannot map the
     * peer's receive queue ... no chunk"), which a failover that catches peer failures to reach
     * the successor does not catch; and, once the lease was released, {@code DIED}, for a close.
     */
    @Test
    void aConnectBetweenThePeersFreeOfItsQueueAndTheReleaseOfItsLeaseSaysThePeerClosed() throws Exception {
        InProcessMemory peerMemory = new InProcessMemory();
        ShmTransport connecting = transport(new InProcessMemory());
        byte[][] address = new byte[1][];
        Throwable[] whileLeaseHeld = new Throwable[1];
        MemoryProvider closingPeer = new MemoryProvider() {
            @Override
            public long pageSize() {
                return peerMemory.pageSize();
            }

            @Override
            public Chunk allocate(long size) {
                return peerMemory.allocate(size);
            }

            @Override
            public byte[] export(Chunk chunk) {
                return peerMemory.export(chunk);
            }

            @Override
            public void free(Chunk chunk) {
                peerMemory.free(chunk);
            }

            @Override
            public void close() { // the peer's close, between the free of its queue and the release of its lease
                whileLeaseHeld[0] = catchThrowable(() -> connecting.connect(new PayloadReader(address[0]), cause -> { }));
            }
        };
        ShmTransport peer = transport(closingPeer, peerMemory);
        address[0] = peer.address();
        peer.close();

        assertThat(whileLeaseHeld[0]).isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("test: the peer worker closed");
        assertThat(((PeerFailedException) whileLeaseHeld[0]).reason()).isEqualTo(PeerFailedException.Reason.CLOSED);
        assertThat(leases()).as("only the connecting worker's lease is left").hasSize(1);
    }

    /**
     * An importer's failure while the peer lives is its own, not a peer failure, said as the failure
     * to map the peer's receive queue: the importer's words speak of a producer.
     */
    @Test
    void anImportFailureWhileThePeerLivesStaysTheImportersError() {
        ShmTransport peer = transport(new InProcessMemory());
        ConduitException refused = new ConduitException("refused by the producer");
        IpcImporter refusing = new IpcImporter() {
            @Override
            public ChunkMapping map(PayloadReader payload, long chunkLength) {
                throw refused;
            }
        };
        ShmTransport connecting = transport(new InProcessMemory(), refusing);

        Throwable thrown = catchThrowable(() -> connecting.connect(new PayloadReader(peer.address()), cause -> { }));

        assertThat(thrown).isExactlyInstanceOf(ConduitException.class).hasCause(refused)
                .hasMessage("test: cannot map the peer's receive queue, which its worker exports as a producer exports a region: "
                        + "refused by the producer");
    }

    /**
     * An address whose token is not the one in the queue it names said "test: cannot reach the peer: the queue's token
     * does not match the address: a stale or forged address", without the refusal as its cause or what to do; it now
     * names the lease, the causes and the remedy, and keeps the refusal as its cause. Nothing of the peer stays mapped,
     * nor its lease watched: until 2026-12-07 the test said so without looking, and a connect that kept either passed.
     */
    @Test
    void anAddressWhoseTokenIsNotInTheQueueItNamesSaysWhatToDo() throws Exception {
        InProcessMemory peerMemory = new InProcessMemory();
        ShmTransport peer = transport(peerMemory);
        byte[] forged = peer.address().clone();
        forged[forged.length - 3 * Long.BYTES - ReceiveQueue.TOKEN_LENGTH] ^= 1; // the token, before the directory's three words
        CountingImporter importer = new CountingImporter(new InProcessMemory());
        ShmTransport connecting = transport(new InProcessMemory(), importer);
        long descriptors = openDescriptors();

        Throwable thrown = catchThrowable(() -> connecting.connect(new PayloadReader(forged), cause -> { }));

        assertThat(importer.mapped).as("the peer's queue, mapped to read its token").hasValue(1);
        assertThat(importer.open()).as("mappings of the peer's queue left open").isZero();
        assertThat(openDescriptors()).as("descriptors open, the peer's lease watch among them were it kept").isEqualTo(descriptors);

        assertThat(thrown).isExactlyInstanceOf(ConduitException.class)
                .hasMessageStartingWith("test: cannot reach the peer: the queue's token does not match the address: a stale or forged "
                        + "address; the chunk its address names (lease conduit-test-")
                .hasMessageEndingWith(".lease) is not that worker's receive queue: the address was altered or forged, or put together "
                        + "from two addresses, or a process that maps the queue overwrote its header. Connect with the address the "
                        + "peer's worker gives now (Worker.address().toBytes())")
                .hasCauseExactlyInstanceOf(IllegalStateException.class);
        assertThat(connecting.connect(new PayloadReader(peer.address()), cause -> { })).as("the true address still connects").isNotNull();
    }

    /** An importer that counts the mappings it made and those closed since. */
    private static final class CountingImporter implements IpcImporter {
        private final IpcImporter importer;
        final AtomicInteger mapped = new AtomicInteger();
        final AtomicInteger closed = new AtomicInteger();

        CountingImporter(IpcImporter importer) {
            this.importer = importer;
        }

        int open() {
            return mapped.get() - closed.get();
        }

        @Override
        public ChunkMapping map(PayloadReader payload, long chunkLength) {
            ChunkMapping mapping = importer.map(payload, chunkLength);
            mapped.incrementAndGet();
            return new ChunkMapping() {
                @Override
                public java.lang.foreign.MemorySegment segment() {
                    return mapping.segment();
                }

                @Override
                public boolean mayFault() {
                    return mapping.mayFault();
                }

                @Override
                public void close() {
                    closed.incrementAndGet();
                    mapping.close();
                }
            };
        }
    }

    private static long openDescriptors() throws java.io.IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    private List<Path> leases() throws Exception {
        try (Stream<Path> s = Files.list(shared)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".lease")).toList();
        }
    }

    /**
     * A connect over a directory other kernels may see too that finds the peer's lease free says the peer is dead and
     * adds that one under another kernel may be alive, its lease held there and free here (9p, virtiofs by default and
     * NFS mounted nolock keep locks to one kernel), with what the file system means; it said only that the peer was dead,
     * sending the operator to look for a crash of a process that was running.
     */
    @Test
    void aPeerJudgedDeadAtTheConnectOverADirectoryOtherKernelsMaySeeIsToldThatItMayLiveUnderAnotherKernel() throws Exception {
        ShmTransport peer = transport(new InProcessMemory());
        ShmTransport connecting = transport(new InProcessMemory(), "the chunk directory is on 9p (told by the test)");
        // The peer's address, naming a lease nobody holds here, as one held under another kernel looks where locks stay in one kernel.
        String held = OwnerLease.leaseName("conduit-test-worker", peer.lease().owner());
        String free = OwnerLease.leaseName("conduit-test-worker", "dead".repeat(8));
        Files.createFile(shared.resolve(free));
        byte[] address = new String(peer.address(), java.nio.charset.StandardCharsets.ISO_8859_1).replace(held, free)
                .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);

        Throwable thrown = catchThrowable(() -> connecting.connect(new PayloadReader(address), cause -> { }));

        assertThat(thrown).isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("test: the peer is dead (its lease conduit-test-")
                .hasMessageEndingWith("is not held). If the peer runs under another kernel, it may be alive, its lease held there "
                        + "and free here, where the file system keeps locks to one kernel (9p; virtiofs unless virtiofsd passes posix "
                        + "locks through; NFS mounted nolock): the chunk directory is on 9p (told by the test)");
        assertThat(((PeerFailedException) thrown).reason()).isEqualTo(PeerFailedException.Reason.DIED);
        assertThat(catchThrowable(() -> transport(new InProcessMemory()).connect(new PayloadReader(address), cause -> { })))
                .as("over a directory of one kernel, no other kernel is named").hasMessageEndingWith("is not held)");
    }

    private ShmTransport transport(InProcessMemory memory) {
        return transport(memory, memory);
    }

    private ShmTransport transport(InProcessMemory memory, String acrossKernels) {
        ShmTransport t = new ShmTransport("test", Linux.libc(), new InProcessContext(shared, NO_MESSAGES), config(), memory, memory,
                acrossKernels);
        open.add(t);
        return t;
    }

    private ShmTransport transport(InProcessMemory memory, IpcImporter importer) {
        return transport((MemoryProvider) memory, importer);
    }

    private ShmTransport transport(MemoryProvider memory, IpcImporter importer) {
        ShmTransport t = new ShmTransport("test", Linux.libc(), new InProcessContext(shared, NO_MESSAGES), config(), memory, importer);
        open.add(t);
        return t;
    }

    private static ShmTransportConfig config() {
        return new ShmTransportConfig(64 << 10, 8 << 10, 64 << 10, Duration.ofMillis(20), Duration.ofSeconds(10),
                Duration.ofMillis(50), 1024, 64L << 30);
    }
}
