package dev.conduit.it.porting;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Message;
import dev.conduit.PeerRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.zip.CRC32C;

/**
 * A small UCX program ported to Conduit's public API: a request/response service whose server
 * does RMA on memory its clients export.
 *
 * <p>In UCX the client would {@code ucp_mem_map} a buffer, {@code ucp_rkey_pack} it, and send the
 * packed rkey and its worker address in a first active message with
 * {@code UCP_AM_SEND_FLAG_REPLY}; the server would unpack the rkey on the {@code reply_ep}, then
 * {@code ucp_put_nbx} / {@code ucp_get_nbx} / {@code ucp_atomic_op_nbx}, {@code ucp_ep_flush}, and
 * answer with {@code ucp_am_send_nbx} on that {@code reply_ep}. Here:
 * <ul>
 * <li>{@code ucp_mem_map} + {@code ucp_rkey_pack} is {@code pool.allocate(size)} +
 *     {@code region.exportHandle()}; {@code ucp_ep_rkey_unpack} is {@code endpoint.peerRegion(handle)},
 *     and RMA addresses are offsets into that region;</li>
 * <li>{@code reply_ep} is {@code Message.replyEndpoint()} over the transports that name their
 *     senders (memfd, posix, verbs); this port does what works over every transport, and gives the
 *     endpoint an error handler of its own: the HELLO carries the client's {@code worker.address()}
 *     and the server connects to it from the handler, keeping that endpoint for every answer and for
 *     RMA (docs/runtime.md, "Answering a message");</li>
 * <li>{@code err_handler} is the {@code EndpointErrorHandler} given to {@code connect}, called on
 *     the progress thread; the endpoint must still be closed, which releases its peer regions
 *     ({@code ucp_ep_close_nbx} with {@code UCP_EP_CLOSE_MODE_FORCE});</li>
 * <li>the client waits for its answers in {@code worker.await} ({@code ucp_worker_wait}), never
 *     busy-polling; the server uses an idle strategy: {@code progress()} while there is work,
 *     {@code await} when there is none.</li>
 * </ul>
 *
 * <p>Active messages (ids) and their little-endian headers:
 * <pre>
 * HELLO   client → server  header: client id (8), address length (4)   payload: worker address, then the region's handle
 * REQUEST client → server  header: request id (8), client id (8), op (4), pad (4), offset (8), a (8), b (8)
 * REPLY   server → client  header: request id (8), status (4: 0 ok, 1 refused), pad (4), value (8)   payload: the reason, when refused
 * BYE     client → server  header: client id (8)
 * </pre>
 */
final class UcxStyleService {

    static final int HELLO = 1;
    static final int REQUEST = 2;
    static final int REPLY = 3;
    static final int BYE = 4;

    /** Puts {@code a} bytes of the pattern seeded {@code b} at {@code offset}, flushes; value: {@code a}. */
    static final int PUT = 1;
    /** Gets {@code a} bytes at {@code offset}; value: their CRC32C. */
    static final int GET = 2;
    /** Fetch-adds {@code a} to the word at {@code offset}; value: the word before. */
    static final int FETCH_ADD = 3;
    /** Compare-and-swaps the word at {@code offset} from {@code a} to {@code b}; value: the word before. */
    static final int CAS = 4;
    /** Never answered: a request that is still outstanding when the server dies. */
    static final int HOLD = 5;

    static final int OK = 0;
    static final int REFUSED = 1;

    /**
     * How long one event may take (an answer, the server's start or end, a message leaving): a hang
     * guard, not a speed check. Each wait has its own, so a run with many is not bounded as a whole.
     */
    static final Duration GUARD = Duration.ofSeconds(60);

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private UcxStyleService() {
    }

    /** The byte the pattern seeded {@code seed} has at {@code i}. */
    static byte pattern(long seed, long i) {
        return (byte) (seed * 31 + i * 7 + (i >>> 8));
    }

    static long crc(MemorySegment s) {
        CRC32C crc = new CRC32C();
        crc.update(s.asByteBuffer());
        return crc.getValue();
    }

    /**
     * The server: one thread that owns a {@code SINGLE} worker of a Conduit of its own, and the
     * sessions of the clients that said HELLO. Clients that die, or close their worker, are
     * noticed by the error handler of the endpoint to them, which ends their session.
     */
    static final class Server implements AutoCloseable {

        /** How long the idle strategy sleeps when a {@code progress()} found nothing: a wake-up ends it sooner. */
        private static final Duration IDLE = Duration.ofMillis(200);

        private record Session(Endpoint endpoint, PeerRegion region) {
        }

        private final Supplier<Conduit> conduits;
        private final Thread thread;
        private final CompletableFuture<WorkerAddress> address = new CompletableFuture<>();
        private final CompletableFuture<Void> stopped = new CompletableFuture<>();
        /** Sessions by client id; touched only on the server's thread (handlers run there), read by others. */
        private final Map<Long, Session> sessions = new ConcurrentHashMap<>();
        /** Clients whose endpoint failed, with the failure's message. */
        private final Map<Long, String> departed = new ConcurrentHashMap<>();
        private final AtomicLong served = new AtomicLong();
        private volatile Conduit conduit;
        private volatile Worker worker;
        private volatile boolean stopping;

        Server(Supplier<Conduit> conduits) {
            this.conduits = conduits;
            this.thread = Thread.ofPlatform().daemon().name("ucx-style-server").unstarted(this::run);
        }

        /** Starts the server's thread; returns the address clients connect to. */
        WorkerAddress start() throws Exception {
            thread.start();
            return address.get(GUARD.toNanos(), TimeUnit.NANOSECONDS);
        }

        private void run() {
            try (Conduit c = conduits.get(); Arena arena = Arena.ofConfined()) {
                conduit = c;
                Worker w = c.newWorker(ThreadMode.SINGLE);
                worker = w;
                MemorySegment scratch = arena.allocate(1 << 20, 64);
                w.onMessage(HELLO, m -> hello(w, m));
                w.onMessage(REQUEST, m -> request(m, scratch));
                w.onMessage(BYE, m -> bye(m.headerLong(0)));
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

        private void hello(Worker w, Message m) {
            long client = m.headerLong(0);
            int addressLength = m.headerInt(8);
            byte[] addressBytes = new byte[addressLength];
            m.copyPayload(0, addressBytes, 0, addressLength);
            byte[] handle = new byte[(int) m.payloadSize() - addressLength];
            m.copyPayload(addressLength, handle, 0, handle.length);
            // The reply_ep of UCX: connect back, from the handler, and keep the endpoint for the session.
            Endpoint ep = w.connect(WorkerAddress.fromBytes(addressBytes), (failed, cause) -> clientFailed(client, failed, cause));
            PeerRegion region = ep.peerRegion(handle);
            sessions.put(client, new Session(ep, region));
            reply(ep, 0, OK, region.size(), null);
        }

        private void request(Message m, MemorySegment scratch) {
            long id = m.headerLong(0);
            Session s = sessions.get(m.headerLong(8));
            if (s == null) return; // no session: nobody to answer
            int op = m.headerInt(16);
            long offset = m.headerLong(24);
            long a = m.headerLong(32);
            long b = m.headerLong(40);
            Endpoint ep = s.endpoint();
            try {
                long value = switch (op) {
                    case PUT -> {
                        MemorySegment source = scratch.asSlice(0, a);
                        for (long i = 0; i < a; i++) source.set(ValueLayout.JAVA_BYTE, i, pattern(b, i));
                        ep.put(source, s.region(), offset);
                        ep.flush(); // complete at the target before the answer says so
                        yield a;
                    }
                    case GET -> {
                        MemorySegment destination = scratch.asSlice(0, a);
                        ep.get(s.region(), offset, destination);
                        yield crc(destination);
                    }
                    case FETCH_ADD -> ep.fetchAdd(s.region(), offset, a);
                    case CAS -> ep.compareAndSwap(s.region(), offset, a, b);
                    case HOLD -> Long.MIN_VALUE;
                    default -> throw new IllegalArgumentException("unknown op " + op);
                };
                if (op == HOLD) return;
                served.incrementAndGet();
                reply(ep, id, OK, value, null);
            } catch (PeerFailedException gone) {
                // The client is gone: its error handler ends the session after this progress step.
            } catch (IndexOutOfBoundsException | IllegalArgumentException refused) {
                reply(ep, id, REFUSED, 0, refused.getMessage());
            }
        }

        private static void reply(Endpoint ep, long id, int status, long value, String reason) {
            MemorySegment header = MemorySegment.ofArray(new byte[24]);
            header.set(LONG, 0, id);
            header.set(INT, 8, status);
            header.set(LONG, 16, value);
            byte[] text = reason == null ? new byte[0] : reason.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            ep.send(REPLY, header, MemorySegment.ofArray(text));
        }

        private void clientFailed(long client, Endpoint failed, PeerFailedException cause) {
            Session s = sessions.remove(client);
            // As ucp_ep_close_nbx(FORCE) after err_handler: closing the endpoint releases its peer region.
            (s != null ? s.endpoint() : failed).close();
            departed.put(client, String.valueOf(cause.getMessage())); // last: a reader that sees it sees the session ended
        }

        private void bye(long client) {
            Session s = sessions.remove(client);
            if (s != null) s.endpoint().close();
        }

        Conduit conduit() {
            return conduit;
        }

        int sessions() {
            return sessions.size();
        }

        Map<Long, String> departed() {
            return Map.copyOf(departed);
        }

        long served() {
            return served.get();
        }

        @Override
        public void close() throws Exception {
            stopping = true;
            Worker w = worker;
            if (w != null) w.signal();
            if (thread.isAlive() || !stopped.isDone()) stopped.get(GUARD.toNanos(), TimeUnit.NANOSECONDS);
        }
    }

    /** A refused request, with the server's reason. */
    static final class RefusedException extends RuntimeException {
        RefusedException(String reason) {
            super(reason);
        }
    }

    /**
     * The client: a {@code SINGLE} worker of the calling thread, a region it exports to the
     * server, and calls that wait for their answer in {@code await}.
     */
    static final class Client implements AutoCloseable {

        private record Reply(int status, long value, String reason) {
        }

        private final long id;
        private final Worker worker;
        private final Pool pool;
        private final Region region;
        private final Endpoint server;
        private final Map<Long, Reply> replies = new ConcurrentHashMap<>();
        private volatile PeerFailedException failure;
        private long nextRequest = 1;
        private long awaits;

        Client(Conduit conduit, String plugin, WorkerAddress serverAddress, long id, long regionSize) {
            this.id = id;
            this.worker = conduit.newWorker(ThreadMode.SINGLE);
            this.pool = conduit.pool(plugin);
            this.region = pool.allocate(regionSize);
            region.segment().fill((byte) 0);
            worker.onMessage(REPLY, this::reply);
            this.server = worker.connect(serverAddress, (ep, cause) -> failure = cause);
        }

        /** Says HELLO with this worker's address and the region's handle; returns the region size the server opened. */
        long hello() {
            byte[] address = worker.address().toBytes();
            byte[] handle = region.exportHandle();
            MemorySegment header = MemorySegment.ofArray(new byte[12]);
            header.set(LONG, 0, id);
            header.set(INT, 8, address.length);
            MemorySegment payload = MemorySegment.ofArray(new byte[address.length + handle.length]);
            MemorySegment.copy(address, 0, payload, ValueLayout.JAVA_BYTE, 0, address.length);
            MemorySegment.copy(handle, 0, payload, ValueLayout.JAVA_BYTE, address.length, handle.length);
            server.send(HELLO, header, payload);
            return answer(0, GUARD);
        }

        long put(long offset, long length, long seed) {
            return call(PUT, offset, length, seed);
        }

        long get(long offset, long length) {
            return call(GET, offset, length, 0);
        }

        long fetchAdd(long offset, long delta) {
            return call(FETCH_ADD, offset, delta, 0);
        }

        long compareAndSwap(long offset, long expected, long desired) {
            return call(CAS, offset, expected, desired);
        }

        /** Sends a request and waits for its answer (for at most {@link UcxStyleService#GUARD}). */
        long call(int op, long offset, long a, long b) {
            return answer(send(op, offset, a, b), GUARD);
        }

        /** Sends a request; returns its id. */
        long send(int op, long offset, long a, long b) {
            long request = nextRequest++;
            MemorySegment header = MemorySegment.ofArray(new byte[48]);
            header.set(LONG, 0, request);
            header.set(LONG, 8, id);
            header.set(INT, 16, op);
            header.set(LONG, 24, offset);
            header.set(LONG, 32, a);
            header.set(LONG, 40, b);
            server.send(REQUEST, header, MemorySegment.NULL);
            return request;
        }

        /**
         * Waits for the answer to {@code request}, sleeping in {@code await} (as
         * {@code ucp_worker_wait}) and progressing after each wake-up.
         *
         * @throws PeerFailedException when the server failed first (an outstanding request's
         *         status, in UCX)
         * @throws RefusedException    with the server's reason
         */
        long answer(long request, Duration guard) {
            long deadline = System.nanoTime() + guard.toNanos();
            while (true) {
                worker.progress();
                Reply r = replies.remove(request);
                if (r != null) {
                    if (r.status() != OK) throw new RefusedException(r.reason());
                    return r.value();
                }
                PeerFailedException f = failure;
                if (f != null) throw new PeerFailedException("request " + request + " outstanding when the server failed", f);
                long left = deadline - System.nanoTime();
                if (left <= 0) throw new AssertionError("no answer to request " + request + " within " + guard);
                awaits++;
                worker.await(Duration.ofNanos(left));
            }
        }

        private void reply(Message m) {
            byte[] reason = m.payloadToArray();
            replies.put(m.headerLong(0), new Reply(m.headerInt(8), m.headerLong(16),
                    new String(reason, java.nio.charset.StandardCharsets.UTF_8)));
        }

        void bye() {
            MemorySegment header = MemorySegment.ofArray(new byte[8]);
            header.set(LONG, 0, id);
            server.send(BYE, header, MemorySegment.NULL);
            // Deliver before closing: close does not flush.
            long deadline = System.nanoTime() + GUARD.toNanos();
            while (server.pending() > 0) {
                worker.progress();
                if (System.nanoTime() - deadline > 0) throw new AssertionError("the BYE still waits here after the hang guard of " + GUARD);
            }
        }

        MemorySegment memory() {
            return region.segment();
        }

        Worker worker() {
            return worker;
        }

        Endpoint endpoint() {
            return server;
        }

        PeerFailedException failure() {
            return failure;
        }

        long awaits() {
            return awaits;
        }

        @Override
        public void close() {
            try {
                worker.close();
            } finally {
                pool.close();
            }
        }
    }
}
