package dev.conduit.it.porting;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.KeptPayload;
import dev.conduit.Message;
import dev.conduit.PeerRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.zip.CRC32C;

/**
 * A shuffle service written for JUCX ({@code org.openucx.jucx.ucp}), in the way of SparkUCX, ported
 * to Conduit's public API: a mapper keeps its shuffle blocks in memory it exports, a reducer asks
 * for a batch of them by active message, gets the block table back as the answer, and fetches the
 * blocks by RMA {@code get}, in parallel, or takes the small ones inline in the answer.
 *
 * <p>The JUCX program and what became of each part:
 * <ul>
 * <li>{@code context.memoryMap(new UcpMemMapParams().allocate().setLength(n))} and
 *     {@code getRemoteKeyBuffer()} are {@code pool.allocate(n)} and {@code region.exportHandle()}:
 *     the handle is the rkey and the address in one, and the table's offsets are offsets into the
 *     region, not virtual addresses of the mapper;</li>
 * <li>{@code setAmRecvHandler(FETCH, (header, headerSize, amData, replyEp) -> ...)} is
 *     {@code worker.onMessage(FETCH, m -> ...)}, and {@code replyEp} is {@code m.replyEndpoint()};
 *     the answer's {@code sendAmNonBlocking(..., callback)} is a {@code send} that returns with the
 *     segments reusable, here one whose payload an encoder writes where the reducer reads it;</li>
 * <li>the reducer's handler returned {@code UCS_INPROGRESS} to keep the answer's data for the
 *     fetch, and closed the {@code UcpAmData} when done: here
 *     {@link Message#keepPayload()} and {@link KeptPayload#close()}, in {@link FetchedBlocks#close()};
 *     a payload is never a rendezvous descriptor to {@code receive} first: it is whole in the handler,
 *     up to {@code maxPayloadSize()} (4 MiB by default), so the mapper puts inline only what fits;</li>
 * <li>{@code unpackRemoteKey} is {@code endpoint.peerRegion(handle)}, once per endpoint, kept for
 *     later batches;</li>
 * <li>{@code getNonBlocking(address, rkey, dst, callback)} for every block, then one
 *     {@code flushNonBlocking} and {@code progress()} until the requests complete: here {@code get}
 *     is complete when it returns (no request, no callback, no flush needed for a get), so the
 *     parallelism comes from threads, each with a worker of its own as SparkUCX gives each of its
 *     threads one (a {@code MULTI} worker would run them one at a time under its lock). Each fetcher
 *     flushes once after its gets, where the JUCX code did, which for gets only orders;</li>
 * <li>a request's {@code onError(status, message)} for a dead mapper is {@link PeerFailedException}
 *     from the next call on the endpoint once a {@code progress()} or {@code await} found the mapper
 *     gone: the fetchers progress between gets, as the JUCX code progressed its requests. Over shared
 *     memory a get of a region the mapper exported still reads its bytes after it died (the mapping
 *     is the reducer's), so every block fetched before the failure is whole, and CRC-checked.</li>
 * </ul>
 *
 * <p>Active messages (ids) and their little-endian headers:
 * <pre>
 * FETCH   reducer → mapper  header: request id (8), inline max (8: blocks up to it come inline; -1 none)   payload: block ids (4 each)
 * BLOCKS  mapper → reducer  header: request id (8), status (4: 0 ok, 1 refused), count (4), handle length (4), pad (4)
 *                           payload, ok: the region's handle, then count entries of 32 bytes (block id (4), inline (4: 0 or 1),
 *                           offset (8: in the region, or for an inline block in this payload), length (8), CRC32C (8)),
 *                           then the inline blocks' bytes;   refused: the reason
 * </pre>
 */
final class JucxStyleShuffle {

    static final int FETCH = 1;
    static final int BLOCKS = 2;

    static final int OK = 0;
    static final int REFUSED = 1;

    /** An inline max that puts no block inline: every block is fetched by RMA. */
    static final long NONE_INLINE = -1;

    static final int ENTRY = 32;

    /** How long one event may take (an answer, a fetch, a start): a hang guard, not a speed check. */
    static final Duration GUARD = Duration.ofSeconds(60);

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private JucxStyleShuffle() {
    }

    /** The byte block {@code block} of the map output seeded {@code seed} has at {@code i}. */
    static byte pattern(long seed, int block, long i) {
        return (byte) (seed * 131 + block * 31 + i * 7 + (i >>> 9));
    }

    static long crc(MemorySegment s) {
        CRC32C crc = new CRC32C();
        crc.update(s.asByteBuffer());
        return crc.getValue();
    }

    /** The CRC32C block {@code block} of length {@code length} should have: what a reducer checks against. */
    static long expectedCrc(long seed, int block, long length) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(Math.max(1, length)).asSlice(0, length);
            for (long i = 0; i < length; i++) s.set(ValueLayout.JAVA_BYTE, i, pattern(seed, block, i));
            return crc(s);
        }
    }

    /** Where each block of these sizes lies in the mapper's region: back to back, each on a 64-byte boundary. */
    static long[] offsets(long[] sizes) {
        long[] offsets = new long[sizes.length];
        long end = 0;
        for (int b = 0; b < sizes.length; b++) {
            offsets[b] = end;
            end = (end + sizes[b] + 63) & ~63L;
        }
        return offsets;
    }

    /**
     * The map side: one thread that owns a {@code SINGLE} worker of a Conduit of its own, and one
     * region of a pool, exported, that holds every block back to back (each on a 64-byte boundary).
     * It answers every FETCH on the endpoint {@link Message#replyEndpoint()} gives.
     */
    static final class Mapper implements AutoCloseable {

        private static final Duration IDLE = Duration.ofMillis(200);

        private final Supplier<Conduit> conduits;
        private final String plugin;
        private final long[] sizes;
        private final long seed;
        private final long[] offsets;
        private final long[] crcs;
        private final Thread thread;
        private final CompletableFuture<WorkerAddress> address = new CompletableFuture<>();
        private final CompletableFuture<Void> stopped = new CompletableFuture<>();
        private volatile Region region;
        private volatile Worker worker;
        private volatile boolean stopping;

        Mapper(Supplier<Conduit> conduits, String plugin, long[] sizes, long seed) {
            this.conduits = conduits;
            this.plugin = plugin;
            this.sizes = sizes.clone();
            this.seed = seed;
            this.offsets = offsets(sizes);
            this.crcs = new long[sizes.length];
            this.thread = Thread.ofPlatform().daemon().name("jucx-style-mapper").unstarted(this::run);
        }

        /** Starts the mapper's thread; returns the address reducers connect to. */
        WorkerAddress start() throws Exception {
            thread.start();
            return address.get(GUARD.toNanos(), TimeUnit.NANOSECONDS);
        }

        private void run() {
            try (Conduit c = conduits.get(); Pool pool = c.pool(plugin)) {
                long total = sizes.length == 0 ? 0 : offsets[sizes.length - 1] + sizes[sizes.length - 1];
                Region r = pool.allocate(Math.max(64, total));
                MemorySegment memory = r.segment();
                for (int b = 0; b < sizes.length; b++) {
                    MemorySegment block = memory.asSlice(offsets[b], sizes[b]);
                    for (long i = 0; i < sizes[b]; i++) block.set(ValueLayout.JAVA_BYTE, i, pattern(seed, b, i));
                    crcs[b] = crc(block);
                }
                byte[] handle = r.exportHandle();
                region = r;
                Worker w = c.newWorker(ThreadMode.SINGLE);
                worker = w;
                w.onMessage(FETCH, m -> fetch(m, memory, handle));
                address.complete(w.address());
                while (!stopping) {
                    if (w.progress() == 0) w.await(IDLE);
                }
                w.close();
            } catch (Throwable t) {
                address.completeExceptionally(t);
                stopped.completeExceptionally(t);
                return;
            }
            stopped.complete(null);
        }

        private void fetch(Message m, MemorySegment memory, byte[] handle) {
            long request = m.headerLong(0);
            long inlineMax = m.headerLong(8);
            Endpoint reducer = m.replyEndpoint();
            try {
                if (m.payloadSize() % 4 != 0) {
                    refuse(reducer, request, "a FETCH payload is block ids of 4 bytes each; got " + m.payloadSize() + " bytes");
                    return;
                }
                int count = (int) (m.payloadSize() / 4);
                int[] blocks = new int[count];
                BitSet asked = new BitSet(sizes.length);
                for (int i = 0; i < count; i++) {
                    blocks[i] = m.payloadInt(4L * i);
                    if (blocks[i] < 0 || blocks[i] >= sizes.length) {
                        refuse(reducer, request, "no block " + blocks[i] + " in this map output: it has blocks 0.." + (sizes.length - 1));
                        return;
                    }
                    if (asked.get(blocks[i])) {
                        refuse(reducer, request, "block " + blocks[i] + " is asked for twice in one FETCH");
                        return;
                    }
                    asked.set(blocks[i]);
                }
                long tableEnd = handle.length + (long) ENTRY * count;
                if (tableEnd > reducer.maxPayloadSize()) {
                    refuse(reducer, request, "a table of " + count + " blocks takes " + tableEnd + " bytes, above the "
                            + reducer.maxPayloadSize() + " an answer carries: ask for fewer blocks at a time");
                    return;
                }
                // What goes inline: the blocks up to inlineMax, in order, while the answer stays within the payload limit.
                boolean[] inline = new boolean[count];
                long payload = tableEnd;
                for (int i = 0; i < count; i++) {
                    long length = sizes[blocks[i]];
                    if (length <= inlineMax && payload + length <= reducer.maxPayloadSize()) {
                        inline[i] = true;
                        payload += length;
                    }
                }
                MemorySegment header = MemorySegment.ofArray(new byte[24]);
                header.set(LONG, 0, request);
                header.set(INT, 8, OK);
                header.set(INT, 12, count);
                header.set(INT, 16, handle.length);
                // The table and the inline blocks are written where the reducer reads them (the bounce ring, above 8 KiB):
                // no buffer of the mapper's to keep until a callback says the send completed.
                reducer.send(BLOCKS, header, payload, (PayloadEncoder) target -> {
                    MemorySegment.copy(handle, 0, target, ValueLayout.JAVA_BYTE, 0, handle.length);
                    long data = tableEnd;
                    for (int i = 0; i < count; i++) {
                        int b = blocks[i];
                        long entry = handle.length + (long) ENTRY * i;
                        target.set(INT, entry, b);
                        target.set(INT, entry + 4, inline[i] ? 1 : 0);
                        target.set(LONG, entry + 8, inline[i] ? data : offsets[b]);
                        target.set(LONG, entry + 16, sizes[b]);
                        target.set(LONG, entry + 24, crcs[b]);
                        if (inline[i]) {
                            MemorySegment.copy(memory, offsets[b], target, data, sizes[b]);
                            data += sizes[b];
                        }
                    }
                    return data;
                });
            } catch (PeerFailedException gone) {
                // The reducer is gone: nobody to answer. Its connection's end closes the reply endpoint.
            }
        }

        private static void refuse(Endpoint reducer, long request, String reason) {
            MemorySegment header = MemorySegment.ofArray(new byte[24]);
            header.set(LONG, 0, request);
            header.set(INT, 8, REFUSED);
            reducer.send(BLOCKS, header, MemorySegment.ofArray(reason.getBytes(StandardCharsets.UTF_8)));
        }

        /** Flips a byte of block {@code block} after its CRC was taken: a corrupt map output, for the reducer's check to catch. */
        void corrupt(int block, long at) {
            MemorySegment memory = region.segment();
            long i = offsets[block] + at;
            memory.set(ValueLayout.JAVA_BYTE, i, (byte) ~memory.get(ValueLayout.JAVA_BYTE, i));
        }

        @Override
        public void close() throws Exception {
            stopping = true;
            Worker w = worker;
            if (w != null) w.signal();
            if (thread.isAlive() || !stopped.isDone()) stopped.get(GUARD.toNanos(), TimeUnit.NANOSECONDS);
        }
    }

    /** A block whose bytes do not have the CRC32C the mapper's table gives. */
    static final class CorruptBlockException extends RuntimeException {
        CorruptBlockException(int block, boolean inline, long expected, long actual) {
            super("block " + block + (inline ? " (inline)" : " (fetched by RMA)") + " has CRC32C " + Long.toHexString(actual)
                    + " where the mapper's table says " + Long.toHexString(expected));
        }
    }

    /** Called by a fetcher before each get, on its thread, after the progress() that precedes it: for a test to act mid-fetch. */
    @FunctionalInterface
    interface BeforeGet {
        BeforeGet NOTHING = (block, worker, toMapper, region) -> { };

        void block(int block, Worker worker, Endpoint toMapper, PeerRegion region) throws Exception;
    }

    /**
     * The blocks of one fetch, CRC-checked: those fetched by RMA in memory of this object's own,
     * the inline ones where the answer was kept ({@link Message#keepPayload()}). Close it to give
     * both back: its segments then throw {@link IllegalStateException}.
     */
    static final class FetchedBlocks implements AutoCloseable {

        private final Map<Integer, MemorySegment> blocks;
        private final Map<Integer, Boolean> inline;
        private final Arena fetched;
        private final KeptPayload answer;

        private FetchedBlocks(Map<Integer, MemorySegment> blocks, Map<Integer, Boolean> inline, Arena fetched, KeptPayload answer) {
            this.blocks = blocks;
            this.inline = inline;
            this.fetched = fetched;
            this.answer = answer;
        }

        MemorySegment block(int id) {
            MemorySegment s = blocks.get(id);
            if (s == null) throw new IllegalArgumentException("block " + id + " was not fetched");
            return s;
        }

        boolean inline(int id) {
            return inline.get(id);
        }

        int count() {
            return blocks.size();
        }

        @Override
        public void close() {
            try {
                answer.close();
            } finally {
                fetched.close();
            }
        }
    }

    /**
     * The reduce side: a {@code SINGLE} worker of the calling thread that asks and is answered, and
     * fetcher threads, each with a {@code SINGLE} worker and an endpoint to the mapper of its own,
     * that fetch by RMA in parallel.
     */
    static final class Reducer implements AutoCloseable {

        private record Answer(int status, int count, byte[] handle, KeptPayload payload, String reason) {
        }

        private final Conduit conduit;
        private final WorkerAddress mapperAddress;
        private final Worker worker;
        private final Endpoint mapper;
        private final List<Fetcher> fetchers = new ArrayList<>();
        private final Map<Long, Answer> answers = new ConcurrentHashMap<>();
        private volatile PeerFailedException failure;
        private long nextRequest = 1;

        Reducer(Conduit conduit, WorkerAddress mapperAddress, int parallelism) {
            this.conduit = conduit;
            this.mapperAddress = mapperAddress;
            this.worker = conduit.newWorker(ThreadMode.SINGLE);
            worker.onMessage(BLOCKS, this::answer);
            this.mapper = worker.connect(mapperAddress, (ep, cause) -> failure = cause);
            for (int i = 0; i < parallelism; i++) fetchers.add(new Fetcher(i));
        }

        /** The reducer's handler: keeps the answer's payload for the fetch, as a JUCX handler returning UCS_INPROGRESS. */
        private void answer(Message m) {
            long request = m.headerLong(0);
            int status = m.headerInt(8);
            if (status != OK) {
                answers.put(request, new Answer(status, 0, null, null, new String(m.payloadToArray(), StandardCharsets.UTF_8)));
                return;
            }
            byte[] handle = new byte[m.headerInt(16)];
            m.copyPayload(0, handle, 0, handle.length);
            answers.put(request, new Answer(status, m.headerInt(12), handle, m.keepPayload(), null));
        }

        FetchedBlocks fetch(int[] blocks, long inlineMax) throws Exception {
            return fetch(blocks, inlineMax, BeforeGet.NOTHING);
        }

        /**
         * Asks the mapper for {@code blocks}, then fetches those not inline in its answer by RMA,
         * spread over the fetchers, and checks every block's CRC32C.
         *
         * @throws PeerFailedException     when the mapper failed before the answer, or under the fetch
         * @throws UcxStyleService.RefusedException with the mapper's reason (a refused request, as the UCX port's)
         * @throws CorruptBlockException   for a block whose CRC32C is not the table's
         */
        FetchedBlocks fetch(int[] blocks, long inlineMax, BeforeGet beforeGet) throws Exception {
            long request = nextRequest++;
            MemorySegment header = MemorySegment.ofArray(new byte[16]);
            header.set(LONG, 0, request);
            header.set(LONG, 8, inlineMax);
            MemorySegment ids = MemorySegment.ofArray(new byte[4 * blocks.length]);
            for (int i = 0; i < blocks.length; i++) ids.set(INT, 4L * i, blocks[i]);
            mapper.send(FETCH, header, ids);
            Answer answer = await(request);
            if (answer.status() != OK) throw new UcxStyleService.RefusedException(answer.reason());

            KeptPayload table = answer.payload();
            Arena fetched = Arena.ofShared();
            try {
                MemorySegment t = table.segment();
                Map<Integer, MemorySegment> result = new HashMap<>();
                Map<Integer, Boolean> inline = new HashMap<>();
                List<List<long[]>> shares = new ArrayList<>();
                long[] load = new long[fetchers.size()];
                for (int i = 0; i < fetchers.size(); i++) shares.add(new ArrayList<>());
                for (int i = 0; i < answer.count(); i++) {
                    long entry = answer.handle().length + (long) ENTRY * i;
                    int block = t.get(INT, entry);
                    boolean isInline = t.get(INT, entry + 4) == 1;
                    long offset = t.get(LONG, entry + 8);
                    long length = t.get(LONG, entry + 16);
                    long crc = t.get(LONG, entry + 24);
                    inline.put(block, isInline);
                    if (isInline) {
                        MemorySegment data = t.asSlice(offset, length);
                        check(block, true, crc, data);
                        result.put(block, data);
                    } else {
                        MemorySegment destination = fetched.allocate(Math.max(1, length), 64).asSlice(0, length);
                        result.put(block, destination);
                        int least = 0; // the fetcher with the fewest bytes so far: shares of about equal size
                        for (int f = 1; f < load.length; f++) if (load[f] < load[least]) least = f;
                        load[least] += length;
                        shares.get(least).add(new long[] {block, offset, crc});
                    }
                }
                List<Future<?>> running = new ArrayList<>();
                for (int f = 0; f < fetchers.size(); f++) {
                    if (shares.get(f).isEmpty()) continue;
                    Fetcher fetcher = fetchers.get(f);
                    List<long[]> share = shares.get(f);
                    running.add(fetcher.thread.submit(() -> {
                        fetcher.fetch(answer.handle(), share, result, beforeGet);
                        return null;
                    }));
                }
                awaitAll(running);
                return new FetchedBlocks(Map.copyOf(result), Map.copyOf(inline), fetched, table);
            } catch (Throwable t) {
                fetched.close();
                table.close();
                throw t;
            }
        }

        /** Waits for every fetcher, then throws the first failure: the destinations are freed only once no fetcher writes them. */
        private static void awaitAll(List<Future<?>> running) throws Exception {
            Throwable first = null;
            for (Future<?> f : running) {
                try {
                    f.get(GUARD.toNanos(), TimeUnit.NANOSECONDS);
                } catch (ExecutionException e) {
                    if (first == null) first = e.getCause();
                    else first.addSuppressed(e.getCause());
                }
            }
            if (first instanceof Exception e) throw e;
            if (first instanceof Error e) throw e;
        }

        private static void check(int block, boolean inline, long expected, MemorySegment data) {
            long actual = crc(data);
            if (actual != expected) throw new CorruptBlockException(block, inline, expected, actual);
        }

        /** Waits for the answer to {@code request} in {@code await}, as a JUCX reducer's waitForEvents. */
        private Answer await(long request) {
            long deadline = System.nanoTime() + GUARD.toNanos();
            while (true) {
                worker.progress();
                Answer a = answers.remove(request);
                if (a != null) return a;
                PeerFailedException f = failure;
                if (f != null) throw new PeerFailedException("fetch " + request + " outstanding when the mapper failed", f);
                long left = deadline - System.nanoTime();
                if (left <= 0) throw new AssertionError("no answer to fetch " + request + " within " + GUARD);
                worker.await(Duration.ofNanos(left));
            }
        }

        Endpoint mapper() {
            return mapper;
        }

        Worker worker() {
            return worker;
        }

        /** Closes the fetchers' workers, each on its own thread, then this one. */
        @Override
        public void close() throws Exception {
            Throwable first = null;
            for (Fetcher f : fetchers) {
                try {
                    f.close();
                } catch (Exception | Error e) {
                    if (first == null) first = e;
                    else first.addSuppressed(e);
                }
            }
            worker.close();
            if (first instanceof Exception e) throw e;
            if (first instanceof Error e) throw e;
        }

        /** One fetch thread: its {@code SINGLE} worker and endpoint are made, used and closed on it alone. */
        private final class Fetcher {

            final ExecutorService thread;
            private Worker worker;
            private Endpoint toMapper;
            private byte[] handle;
            private PeerRegion region;

            Fetcher(int index) {
                this.thread = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("jucx-style-fetcher-" + index).factory());
            }

            /** Gets each of {@code share} (block, offset, CRC) into its destination in {@code into}, flushes once, checks each. */
            void fetch(byte[] regionHandle, List<long[]> share, Map<Integer, MemorySegment> into, BeforeGet beforeGet) throws Exception {
                if (worker == null) {
                    worker = conduit.newWorker(ThreadMode.SINGLE);
                    toMapper = worker.connect(mapperAddress);
                }
                if (!Arrays.equals(regionHandle, handle)) {
                    // unpackRemoteKey: once per endpoint and region, kept for later batches.
                    if (region != null) region.close();
                    region = toMapper.peerRegion(regionHandle);
                    handle = regionHandle;
                }
                for (long[] b : share) {
                    worker.progress(); // what reports a dead mapper: the next call on the endpoint then throws its failure
                    beforeGet.block((int) b[0], worker, toMapper, region);
                    toMapper.get(region, b[1], into.get((int) b[0]));
                }
                toMapper.flush();
                for (long[] b : share) check((int) b[0], false, b[2], into.get((int) b[0]));
            }

            void close() throws Exception {
                try {
                    thread.submit(() -> {
                        if (worker != null) worker.close(); // closes the endpoint and its peer region
                        return null;
                    }).get(GUARD.toNanos(), TimeUnit.NANOSECONDS);
                } finally {
                    thread.shutdown();
                }
            }
        }
    }
}
