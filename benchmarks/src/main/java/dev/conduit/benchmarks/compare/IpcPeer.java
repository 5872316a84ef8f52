package dev.conduit.benchmarks.compare;

import dev.conduit.benchmarks.PeerJvm;
import dev.conduit.shm.ReceiveQueue;
import io.aeron.Aeron;
import io.aeron.FragmentAssembler;
import io.aeron.Publication;
import io.aeron.Subscription;
import io.aeron.driver.MediaDriver;
import io.aeron.driver.ThreadingMode;
import io.aeron.logbuffer.FragmentHandler;
import io.aeron.logbuffer.FrameDescriptor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.agrona.IoUtil;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

/**
 * Peers of benchmarks/compare.sh in Java libraries built for shared-memory messaging, two JVMs
 * each, ping-pong at 8 B, 4 KiB, 64 KiB and 1 MiB; one-way latency = round trip / 2, each round
 * trip timed with {@link System#nanoTime}, the median printed as {@code PEER - am_lat SIZE p50_us VALUE}.
 * <ul>
 *   <li>{@code IpcPeer aeron}: Aeron {@code aeron:ipc}, an embedded media driver in this JVM
 *       ({@code SHARED} threading, backing-off idle strategy, so it does not take a core; 16 MiB
 *       terms), one
 *       publication and one subscription each way; messages over the MTU are fragmented and
 *       reassembled with a {@link FragmentAssembler}, which copies them out; an unfragmented echo is
 *       copied out by the handler.</li>
 *   <li>{@code IpcPeer agrona}: two Agrona {@link OneToOneRingBuffer}s (16 MiB each) over one file in
 *       /dev/shm mapped by both JVMs ({@link MappedByteBuffer} wrapped in an {@link UnsafeBuffer});
 *       the handler copies each echo out of the ring.</li>
 *   <li>{@code IpcPeer line}: the Java limit, the C limit's ping-pong ({@code peers/pingpong.c}) in
 *       Java: one 64-byte aligned slot per direction in a file in /dev/shm that both JVMs map
 *       ({@link FileChannel#map(FileChannel.MapMode, long, long, Arena)}, a shared arena), a word in
 *       the slot's first 8 bytes that the other side spins on (acquire; a release store after the
 *       payload: the payload's length in its upper half, a sequence number in its lower) and the
 *       payload from its byte 8, so that up to 56 bytes a hop is one cache line; each hop copies the
 *       payload that came in into the outgoing slot with {@link MemorySegment#copy} (one copy a
 *       hop, as the C limit's {@code memcpy}). No queue, no handler: what the JVM itself reaches,
 *       for the other rows to be read against.</li>
 *   <li>{@code IpcPeer queue}: Conduit's shared-memory queue alone, with no transport, worker or
 *       handler table on it: two {@link ReceiveQueue}s (16 MiB rings) in one file in /dev/shm that
 *       both JVMs map; a hop claims a record in the other side's queue ({@code claim}, its two
 *       CASes), writes the payload's length and the payload into it and commits it, and the other
 *       side's {@code poll} hands it to a handler that copies the payload out (the echo: into the
 *       record of its answer, one copy a hop). Every size inline, where the memfd and posix
 *       transports move a payload above {@code inline.max} through a bounce ring; no wake-up check,
 *       no liveness, no connection. Read against Conduit memfd, it is what the transport and the
 *       runtime add; against the Java limit, what the queue's protocol costs.</li>
 * </ul>
 * Every side of every kind spins with a {@link Thread#onSpinWait} after a poll that found nothing,
 * as {@code conduit perf} and the C ping-pong do (the Aeron measuring side did not until
 * 2026-12-05, and gave up 0-11 ns to the others by it).
 * The other JVM ({@code IpcPeer --echo KIND PATH}) is started with {@link ProcessBuilder}, with the
 * same java, class path and JVM options, and echoes every message; it ends with the measuring JVM,
 * whose end ends its standard input ({@code Watch.measuringJvm}). Both sides read every payload
 * they receive, as {@code conduit perf} does (its server copies each PING's payload into the PONG,
 * its client copies each PONG's out): a payload nobody reads is never moved to the reader's core,
 * which would make large messages look cheaper than they are.
 */
public final class IpcPeer {

    private static final List<String> KINDS = List.of("aeron", "agrona", "line", "queue");
    private static final int[] SIZES = {8, 4096, 65536, 1 << 20};
    private static final int RING = 16 << 20;
    private static final int RING_BYTES = RING + RingBufferDescriptor.TRAILER_LENGTH;
    private static final int PING = 1, BYE = 2;
    private static final long MAX_NANOS = 5_000_000_000L;
    /** {@code line}: where a slot's payload starts, after its word; a slot's size, a whole number of lines. */
    private static final long LINE_PAYLOAD = 8;
    private static final long LINE_SLOT = LINE_PAYLOAD + (1 << 20) + 63 & -64;
    private static final VarHandle SEQUENCE = ValueLayout.JAVA_LONG.varHandle();
    /** {@code line}: a spinning side looks whether the other JVM still lives once per this many spins (+1), about every 10 ms. */
    private static final long ALIVE_CHECK = (1 << 20) - 1;
    /** Fragments a poll may hand over: a large message is many MTU-sized fragments, not one poll each. */
    private static final int FRAGMENT_LIMIT = 64;
    private static final long FIRST_WARMUP_NANOS = 2_000_000_000L;
    private static final long WARMUP_NANOS = 300_000_000L;
    /** {@code queue}: each ring's capacity; a 1 MiB message is one record, well within what always fits. */
    private static final long QUEUE_CAPACITY = 16 << 20;
    /** {@code queue}: where a record's payload length is written, after the record's header; the payload follows it. */
    private static final long QUEUE_BODY = ReceiveQueue.RECORD_HEADER;
    private static final long QUEUE_PAYLOAD = QUEUE_BODY + 8;
    /** {@code queue}: both JVMs are this class's; the token proves nothing between them, and the echo need not be told it. */
    private static final byte[] QUEUE_TOKEN = new byte[ReceiveQueue.TOKEN_LENGTH];

    /**
     * What a side spinning on the other JVM looks at, once per {@link #ALIVE_CHECK} + 1 spins (about every 10 ms), so that
     * neither spins for good on one that died: a spin loop never returns by itself, and nothing else would end it.
     */
    private static final class Watch {
        private final BooleanSupplier alive;
        private long spins;

        private Watch(BooleanSupplier alive) {
            this.alive = alive;
        }

        /** The echo JVM, from the measuring JVM: its child, whose pid stays its own until the child is reaped. */
        static Watch echo(Process peer) {
            return new Watch(peer::isAlive);
        }

        /**
         * The measuring JVM, from its echo: the end of the echo's standard input, a pipe whose writing end only the
         * measuring JVM holds ({@link #startPeer}), so that it comes with that JVM's end however it ends, and even before
         * the echo started reading. Until 2026-12-07 the echo watched the pid of its parent, looked up once its start-up
         * was done (about 0.3 s): a measuring JVM killed sooner had left it a child of init, which lives on, and the echo
         * spun for good ({@code IpcPeerTest#anEchoJvmWhoseMeasuringJvmIsKilledAsItStartsEnds}).
         */
        static Watch measuringJvm() {
            AtomicBoolean ended = new AtomicBoolean();
            Thread.ofPlatform().daemon().name("IpcPeer echo: reads standard input to its end, the measuring JVM's").start(() -> {
                try {
                    while (System.in.read() >= 0) {
                        // nothing is sent: the stream ends with the measuring JVM
                    }
                } catch (IOException e) {
                    // a pipe that cannot be read says no more of the measuring JVM than its end does
                }
                ended.set(true);
            });
            return new Watch(() -> !ended.get());
        }

        /** Counts a spin; whether the other JVM is found gone. */
        boolean gone() {
            return (++spins & ALIVE_CHECK) == 0 && !alive.getAsBoolean();
        }
    }

    /** For an offer that has nothing to look at while it waits. */
    private static final Runnable NOTHING = () -> { };

    /** A transport: send a message, wait for one. */
    private interface Link {
        void send(UnsafeBuffer buf, int length);

        void awaitOne();
    }

    private IpcPeer() {
    }

    /** {@code kind}, if it is one: another word ran Agrona's rings under the name asked for, and a row measured the wrong peer. */
    private static String checkKind(String kind) {
        if (!KINDS.contains(kind)) {
            throw new IllegalArgumentException("unknown kind '" + kind + "': IpcPeer measures one of " + String.join(", ", KINDS)
                    + " (the class javadoc says what each is)");
        }
        return kind;
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 3 && args[0].equals("--echo")) {
            switch (checkKind(args[1])) {
                case "aeron" -> aeronEcho(args[2]);
                case "line" -> lineEcho(Path.of(args[2]));
                case "queue" -> queueEcho(Path.of(args[2]));
                default -> agronaEcho(Path.of(args[2]));
            }
            return;
        }
        String kind = checkKind(args.length > 0 ? args[0] : "aeron");
        Path dir = Path.of("/dev/shm", "conduit-" + kind + "-" + ProcessHandle.current().pid());
        // compare.sh's timeout ends this JVM with SIGTERM, which runs no finally: the media driver's directory (tens of MiB of
        // term buffers) or the shared file would stay in /dev/shm under a name that no later run reuses.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> IoUtil.delete(dir.toFile(), true), "removes " + dir));
        if (kind.equals("aeron")) {
            MediaDriver.Context ctx = new MediaDriver.Context().aeronDirectoryName(dir.toString())
                    .threadingMode(ThreadingMode.SHARED).sharedIdleStrategy(new BackoffIdleStrategy())
                    .ipcTermBufferLength(16 << 20)
                    .dirDeleteOnStart(true).dirDeleteOnShutdown(true);
            try (MediaDriver driver = launch(ctx, dir);
                 Aeron aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(dir.toString()));
                 Publication pub = aeron.addPublication("aeron:ipc", 1001);
                 Subscription sub = aeron.addSubscription("aeron:ipc", 1002)) {
                Process peer = startPeer("aeron", dir.toString());
                Watch echo = Watch.echo(peer);
                // Made once: a lambda made per send would capture anew each time, an allocation on the measured path.
                Runnable echoAlive = () -> {
                    if (echo.gone()) throw echoEnded(peer);
                };
                try {
                    while (!pub.isConnected() || !sub.isConnected()) {
                        if (!peer.isAlive()) throw echoEnded(peer);
                        Thread.sleep(1);
                    }
                    boolean[] got = new boolean[1];
                    // The echo is read, as conduit perf's client copies each PONG's payload out: the assembler copies a
                    // fragmented one (4 KiB and up: over the MTU) into its own buffer, an unfragmented one is copied here.
                    UnsafeBuffer received = new UnsafeBuffer(ByteBuffer.allocateDirect(1 << 20));
                    FragmentAssembler assembler = new FragmentAssembler((b, o, l, h) -> got[0] = true);
                    FragmentHandler reader = (b, o, l, h) -> {
                        if ((h.flags() & FrameDescriptor.UNFRAGMENTED) == FrameDescriptor.UNFRAGMENTED) {
                            b.getBytes(o, received, 0, l);
                            got[0] = true;
                        } else {
                            assembler.onFragment(b, o, l, h);
                        }
                    };
                    measure("aeron", new Link() {
                        @Override
                        public void send(UnsafeBuffer buf, int length) {
                            offer(pub, buf, length, echoAlive);
                        }

                        @Override
                        public void awaitOne() {
                            got[0] = false;
                            while (!got[0]) {
                                if (sub.poll(reader, FRAGMENT_LIMIT) == 0) {
                                    Thread.onSpinWait();
                                    if (echo.gone()) throw echoEnded(peer);
                                }
                            }
                        }
                    });
                    UnsafeBuffer bye = new UnsafeBuffer(new byte[4]);
                    bye.putInt(0, -1);
                    offer(pub, bye, 4, echoAlive);
                } finally {
                    end(peer);
                }
            }
        } else if (kind.equals("line")) {
            javaLimit(dir);
        } else if (kind.equals("queue")) {
            queueAlone(dir);
        } else {
            try (FileChannel fc = create(dir, 2L * RING_BYTES)) {
                MappedByteBuffer map = fc.map(FileChannel.MapMode.READ_WRITE, 0, 2L * RING_BYTES);
                OneToOneRingBuffer toPeer = new OneToOneRingBuffer(new UnsafeBuffer(map, 0, RING_BYTES));
                OneToOneRingBuffer fromPeer = new OneToOneRingBuffer(new UnsafeBuffer(map, RING_BYTES, RING_BYTES));
                Process peer = startPeer("agrona", dir.toString());
                Watch echo = Watch.echo(peer);
                try {
                    // The echo is copied out of the ring, as conduit perf's client copies each PONG's payload out.
                    UnsafeBuffer received = new UnsafeBuffer(ByteBuffer.allocateDirect(1 << 20));
                    MessageHandler reader = (type, b, i, l) -> b.getBytes(i, received, 0, l);
                    measure("agrona", new Link() {
                        @Override
                        public void send(UnsafeBuffer buf, int length) {
                            while (!toPeer.write(PING, buf, 0, length)) {
                                Thread.onSpinWait();
                                if (echo.gone()) throw echoEnded(peer);
                            }
                        }

                        @Override
                        public void awaitOne() {
                            while (fromPeer.read(reader, 1) == 0) {
                                Thread.onSpinWait();
                                if (echo.gone()) throw echoEnded(peer);
                            }
                        }
                    });
                    while (!toPeer.write(BYE, new UnsafeBuffer(new byte[4]), 0, 4)) {
                        Thread.onSpinWait();
                        if (echo.gone()) throw echoEnded(peer);
                    }
                } finally {
                    end(peer);
                }
            } finally {
                Files.deleteIfExists(dir);
            }
        }
    }

    /**
     * The Java limit ({@code line}, the class's javadoc): the C limit's ping-pong, hop for hop.
     * The file is unlinked once both JVMs have mapped it (after the first round trip), so that
     * nothing is left in /dev/shm however this JVM ends.
     */
    private static void javaLimit(Path file) throws IOException, InterruptedException {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment slots = createAndMap(file, 2 * LINE_SLOT, arena);
            MemorySegment toPeer = slots.asSlice(0, LINE_SLOT), fromPeer = slots.asSlice(LINE_SLOT, LINE_SLOT);
            Process peer = startPeer("line", file.toString());
            try {
                Watch echo = Watch.echo(peer);
                measure("java_line", new Link() {
                    private long word;
                    private final Unlink unlinked = new Unlink(file);

                    /** As the C limit: what came back goes out again (one copy a hop); {@code buf} is not read. */
                    @Override
                    public void send(UnsafeBuffer buf, int length) {
                        MemorySegment.copy(fromPeer, LINE_PAYLOAD, toPeer, LINE_PAYLOAD, length);
                        word = (long) length << 32 | (word + 1 & 0xFFFF_FFFFL);
                        SEQUENCE.setRelease(toPeer, 0L, word);
                    }

                    @Override
                    public void awaitOne() {
                        while ((long) SEQUENCE.getAcquire(fromPeer, 0L) != word) {
                            Thread.onSpinWait();
                            if (echo.gone()) throw echoEnded(peer);
                        }
                        unlinked.once();
                    }
                });
            } finally {
                SEQUENCE.setRelease(toPeer, 0L, -1L); // bye
                end(peer);
                Files.deleteIfExists(file);
            }
        }
    }

    /**
     * Conduit's queue alone ({@code queue}, the class's javadoc). This JVM formats both queues before
     * it starts the echo, the echo's first: a flyweight over a fresh queue reads it from its start,
     * whoever formatted it. The file is unlinked once both JVMs have mapped it (after the first
     * round trip), as the Java limit's.
     */
    private static void queueAlone(Path file) throws IOException, InterruptedException {
        try (Arena arena = Arena.ofShared()) {
            long queueBytes = ReceiveQueue.mappedLength(QUEUE_CAPACITY);
            MemorySegment both = createAndMap(file, 2 * queueBytes, arena);
            ReceiveQueue toEcho = ReceiveQueue.format(both.asSlice(0, queueBytes), QUEUE_TOKEN);
            ReceiveQueue fromEcho = ReceiveQueue.format(both.asSlice(queueBytes, queueBytes), QUEUE_TOKEN);
            Process peer = startPeer("queue", file.toString());
            try {
                Watch echo = Watch.echo(peer);
                MemorySegment received = arena.allocate(1 << 20);
                ReceiveQueue.RecordHandler reader = (memory, offset, type, length) ->
                        MemorySegment.copy(memory, offset + QUEUE_PAYLOAD, received, 0, memory.get(ValueLayout.JAVA_LONG, offset + QUEUE_BODY));
                measure("conduit_queue", new Link() {
                    private UnsafeBuffer sending;
                    private MemorySegment sendingSegment;
                    private final Unlink unlinked = new Unlink(file);

                    @Override
                    public void send(UnsafeBuffer buf, int length) {
                        if (buf != sending) { // one buffer per size: a view made per send would be allocated on the measured path
                            sending = buf;
                            sendingSegment = MemorySegment.ofBuffer(buf.byteBuffer());
                        }
                        if (!queueSend(toEcho, sendingSegment, 0, length, echo)) throw echoEnded(peer);
                    }

                    @Override
                    public void awaitOne() {
                        while (fromEcho.poll(reader, 1) == 0) {
                            Thread.onSpinWait();
                            if (echo.gone()) throw echoEnded(peer);
                        }
                        unlinked.once();
                    }
                });
                if (!queueSend(toEcho, MemorySegment.NULL, 0, -1, echo)) throw echoEnded(peer); // bye: a length no message has
            } finally {
                end(peer);
                Files.deleteIfExists(file);
            }
        }
    }

    /**
     * Claims a record in {@code queue} for {@code length} payload bytes (at least none), writes the
     * length and the payload (from {@code from} at {@code fromOffset}), and commits it; spins while
     * the ring is full. False, with nothing sent, when the other JVM is found gone meanwhile.
     */
    private static boolean queueSend(ReceiveQueue queue, MemorySegment from, long fromOffset, long length, Watch other) {
        int record = ReceiveQueue.recordLength(QUEUE_PAYLOAD + Math.max(0, length));
        long offset;
        while ((offset = queue.claim(record)) < 0) {
            Thread.onSpinWait();
            if (other.gone()) return false;
        }
        MemorySegment memory = queue.memory();
        memory.set(ValueLayout.JAVA_LONG, offset + QUEUE_BODY, length);
        if (length > 0) MemorySegment.copy(from, fromOffset, memory, offset + QUEUE_PAYLOAD, length);
        queue.commit(offset, record, ReceiveQueue.MSG);
        return true;
    }

    /**
     * The echo of {@code queue}: polls the main JVM's queue and answers each message in the other,
     * its payload copied from the one record into the other; a length of -1 ends it, and so does
     * the main JVM's end.
     */
    private static void queueEcho(Path file) throws IOException {
        Watch main = Watch.measuringJvm();
        try (FileChannel fc = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
             Arena arena = Arena.ofShared()) {
            long queueBytes = ReceiveQueue.mappedLength(QUEUE_CAPACITY);
            MemorySegment both = fc.map(FileChannel.MapMode.READ_WRITE, 0, 2 * queueBytes, arena);
            ReceiveQueue fromMain = ReceiveQueue.attach(both.asSlice(0, queueBytes), QUEUE_TOKEN);
            ReceiveQueue toMain = ReceiveQueue.attach(both.asSlice(queueBytes, queueBytes), QUEUE_TOKEN);
            boolean[] bye = new boolean[1];
            ReceiveQueue.RecordHandler answer = (memory, offset, type, length) -> {
                long size = memory.get(ValueLayout.JAVA_LONG, offset + QUEUE_BODY);
                if (size < 0) {
                    bye[0] = true;
                    return;
                }
                if (!queueSend(toMain, memory, offset + QUEUE_PAYLOAD, size, main)) bye[0] = true;
            };
            while (!bye[0]) {
                if (fromMain.poll(answer, 1) == 0) {
                    Thread.onSpinWait();
                    if (main.gone()) return;
                }
            }
        }
    }

    /** {@code file} created ({@link #create}) and mapped into {@code arena}; removed again when either fails. */
    private static MemorySegment createAndMap(Path file, long bytes, Arena arena) throws IOException {
        try (FileChannel fc = create(file, bytes)) {
            return fc.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(file);
            throw e;
        }
    }

    /**
     * Removes the file both JVMs map once the first round trip came back, so both have mapped it:
     * nothing is left in /dev/shm however this JVM ends.
     */
    private static final class Unlink {
        private final Path file;
        private boolean done;

        Unlink(Path file) {
            this.file = file;
        }

        void once() {
            if (done) return;
            done = true;
            try {
                Files.delete(file);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }

    /**
     * Creates {@code file} of {@code bytes}, written through with zeros: a file system that runs out of room (a small or
     * full /dev/shm) then fails the write naming ENOSPC, where a mapping of a sparse file faults on the first page it cannot
     * back, which the JVM reports as "a fault occurred in an unsafe memory access operation", naming nothing.
     */
    static FileChannel create(Path file, long bytes) throws IOException {
        FileChannel fc = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
        try {
            ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
            for (long at = 0; at < bytes; ) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), bytes - at));
                at += fc.write(zeros, at);
            }
            return fc;
        } catch (IOException e) {
            fc.close();
            Files.deleteIfExists(file);
            Path where = file.toAbsolutePath().getParent();
            throw new IOException(file + ": cannot write its " + (bytes + (1 << 20) - 1 >> 20) + " MiB in " + where + " (" + e.getMessage()
                    + "): " + freeRoom(where), e);
        }
    }

    /**
     * The embedded media driver, whose files are in {@code dir}. It maps its command-and-control file and fills it through
     * the mapping, so a /dev/shm without room for it faults, which the JVM reports as an InternalError naming nothing.
     */
    private static MediaDriver launch(MediaDriver.Context ctx, Path dir) {
        try {
            return MediaDriver.launch(ctx);
        } catch (InternalError e) {
            Path where = dir.toAbsolutePath().getParent();
            long free;
            try {
                free = Files.getFileStore(where).getUsableSpace();
            } catch (IOException unknown) {
                free = -1;
            }
            throw new IllegalStateException("the Aeron media driver could not write its files in " + dir + " (" + e.getMessage()
                    + "): a page of a file mapped there could not be backed, as when " + where + " is out of room ("
                    + (free < 0 ? "its free space unknown" : free + " bytes free") + "): " + freeRoom(where), e);
        }
    }

    /** The remedy for a shared-memory file system without room. */
    private static String freeRoom(Path where) {
        return "free room there (df -h " + where + "; files that stopped runs left) or make it larger";
    }

    /** Waits for the echo JVM to end, and ends it if it does not within 30 s. */
    private static void end(Process peer) throws InterruptedException {
        if (!peer.waitFor(30, TimeUnit.SECONDS)) {
            peer.destroyForcibly();
        }
    }

    /**
     * Warms up as {@code conduit perf} does, so that no peer is measured before its JIT is done:
     * every size once, then before each size at least {@link #FIRST_WARMUP_NANOS} (the first) or
     * {@link #WARMUP_NANOS}, and a fifth of the measurement.
     */
    private static void measure(String name, Link link) {
        for (int size : SIZES) roundTrips(link, size, rounds(size) / 5, 0, null);
        boolean first = true;
        for (int size : SIZES) {
            int n = rounds(size);
            roundTrips(link, size, n / 5, first ? FIRST_WARMUP_NANOS : WARMUP_NANOS, null);
            first = false;
            double[] oneWay = new double[n];
            int measured = roundTrips(link, size, n, 0, oneWay);
            Arrays.sort(oneWay, 0, measured);
            System.out.printf("%s\t-\tam_lat\t%d\tp50_us\t%.4f%n", name, size, oneWay[measured / 2]);
        }
    }

    private static int rounds(int size) {
        return size <= 4096 ? 50_000 : size <= 65536 ? 10_000 : 1_000;
    }

    /**
     * {@code count} round trips of {@code size} bytes, and more until {@code minNanos} passed; one
     * way in µs into {@code oneWay} when given. On a loaded 2-core machine a preempted peer costs a
     * time slice per round trip: a phase stops after {@link #MAX_NANOS} (the median is then of what
     * was measured, at least 1,000).
     *
     * @return the round trips recorded
     */
    private static int roundTrips(Link link, int size, int count, long minNanos, double[] oneWay) {
        UnsafeBuffer buf = new UnsafeBuffer(ByteBuffer.allocateDirect(size));
        long start = System.nanoTime();
        int recorded = 0;
        for (int i = 0; i < count || (oneWay == null && System.nanoTime() - start < minNanos); i++) {
            long nanos = roundTrip(link, buf, size, i);
            if (oneWay != null && recorded < oneWay.length) {
                oneWay[recorded++] = nanos / 2.0 / 1000.0;
            }
            if (i >= 1_000 && System.nanoTime() - start > MAX_NANOS && System.nanoTime() - start >= minNanos) {
                break;
            }
        }
        return recorded;
    }

    /**
     * One round trip, timed here, in nanoseconds: in a method that every round trip of warm-up and
     * measurement calls, compiled by its call count, and not in {@link #roundTrips}' loop, whose
     * compilation on the stack ends with the loop, so that the next phase's loop starts
     * interpreted (as {@code conduit perf} times each sample: its PerfClient says why).
     */
    private static long roundTrip(Link link, UnsafeBuffer buf, int size, int i) {
        long t0 = System.nanoTime();
        buf.putInt(0, i);
        link.send(buf, size);
        link.awaitOne();
        return System.nanoTime() - t0;
    }

    /**
     * The echo JVM: the same java, every JVM option of this one (Agrona's and Aeron's opens, which {@link PeerJvm} would
     * leave out) and its class path. Not this process's command line up to the main class: one started otherwise (a
     * test's JVM, by {@code -jar}) has no such class there, and its echo would have been that JVM's command again.
     */
    private static Process startPeer(String kind, String path) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), IpcPeer.class.getName(), "--echo", kind, path));
        // Its standard input is a pipe this JVM holds open and never writes: its end is this JVM's, for the echo to watch.
        return new ProcessBuilder(cmd).inheritIO().redirectInput(ProcessBuilder.Redirect.PIPE).start();
    }

    /** Offers until the publication takes it, {@code spun} after each refusal (it may end the wait by throwing). */
    private static void offer(Publication pub, UnsafeBuffer buf, int length, Runnable spun) {
        long r;
        while ((r = pub.offer(buf, 0, length)) < 0) {
            if (r == Publication.CLOSED || r == Publication.MAX_POSITION_EXCEEDED) {
                throw new IllegalStateException("Aeron publication: " + Publication.errorString(r));
            }
            Thread.onSpinWait();
            spun.run();
        }
    }

    /** Why the measuring JVM stops: its echo JVM ended, so no echo will come. */
    private static IllegalStateException echoEnded(Process peer) {
        return new IllegalStateException("the echo JVM (pid " + peer.pid() + ", " + PeerJvm.howItEnded(peer)
                + ") ended, so no echo will come; its output, above, says why if it failed by itself");
    }

    private static void aeronEcho(String dir) {
        Watch main = Watch.measuringJvm();
        try (Aeron aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(dir));
             Publication pub = aeron.addPublication("aeron:ipc", 1002);
             Subscription sub = aeron.addSubscription("aeron:ipc", 1001)) {
            boolean[] bye = new boolean[1];
            UnsafeBuffer out = new UnsafeBuffer(ByteBuffer.allocateDirect(1 << 20));
            FragmentHandler echo = new FragmentAssembler((b, o, l, h) -> {
                if (l == 4 && b.getInt(o) == -1) {
                    bye[0] = true;
                    return;
                }
                out.putBytes(0, b, o, l);
                offer(pub, out, l, NOTHING); // the media driver is the main JVM's: Aeron's client exits once it is gone
            });
            while (!bye[0]) {
                if (sub.poll(echo, FRAGMENT_LIMIT) == 0) {
                    Thread.onSpinWait();
                    if (main.gone()) return; // not the 10 s of Aeron's driver timeout, spinning
                }
            }
        }
    }

    /**
     * The echo of {@code line}: waits for a new word in the main JVM's slot, copies the payload of
     * the length it names into its own slot, and publishes the same word there; -1 ends it, and so
     * does the main JVM's end.
     */
    private static void lineEcho(Path file) throws IOException {
        Watch main = Watch.measuringJvm();
        try (FileChannel fc = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
             Arena arena = Arena.ofShared()) {
            MemorySegment slots = fc.map(FileChannel.MapMode.READ_WRITE, 0, 2 * LINE_SLOT, arena);
            MemorySegment fromMain = slots.asSlice(0, LINE_SLOT), toMain = slots.asSlice(LINE_SLOT, LINE_SLOT);
            long seen = 0;
            while (true) {
                long s;
                while ((s = (long) SEQUENCE.getAcquire(fromMain, 0L)) == seen) {
                    Thread.onSpinWait();
                    if (main.gone()) return;
                }
                if (s == -1) return;
                seen = s;
                MemorySegment.copy(fromMain, LINE_PAYLOAD, toMain, LINE_PAYLOAD, s >>> 32);
                SEQUENCE.setRelease(toMain, 0L, s);
            }
        }
    }

    private static void agronaEcho(Path file) throws IOException {
        Watch main = Watch.measuringJvm();
        try (FileChannel fc = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MappedByteBuffer map = fc.map(FileChannel.MapMode.READ_WRITE, 0, 2L * RING_BYTES);
            OneToOneRingBuffer fromMain = new OneToOneRingBuffer(new UnsafeBuffer(map, 0, RING_BYTES));
            OneToOneRingBuffer toMain = new OneToOneRingBuffer(new UnsafeBuffer(map, RING_BYTES, RING_BYTES));
            boolean[] bye = new boolean[1];
            while (!bye[0]) {
                int n = fromMain.read((type, b, i, l) -> {
                    if (type == BYE) {
                        bye[0] = true;
                        return;
                    }
                    while (!toMain.write(PING, b, i, l)) {
                        Thread.onSpinWait();
                        if (main.gone()) {
                            bye[0] = true;
                            return;
                        }
                    }
                }, 1);
                if (n == 0) {
                    Thread.onSpinWait();
                    if (main.gone()) return;
                }
            }
        }
    }
}
