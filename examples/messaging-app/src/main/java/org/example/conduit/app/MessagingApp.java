package org.example.conduit.app;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.Region;
import dev.conduit.ThreadPolicy;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ThreadMode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * Two processes, a responder and a caller, over whatever plugins the runtime finds: messages over
 * the {@code tcp} transport (loaded from the plugin directory, {@code CONDUIT_PLUGIN_PATH}), a
 * region in shared memory from the {@code memfd} plugin, passed by its IPC handle.
 *
 * <pre>
 * java -p app.jar:libs -m org.example.conduit.app/org.example.conduit.app.MessagingApp respond
 *     prints ADDRESS &lt;hex&gt;, then serves until the caller says goodbye
 * java -p app.jar:libs -m org.example.conduit.app/org.example.conduit.app.MessagingApp call &lt;hex&gt;
 * </pre>
 *
 * The caller's worker is {@code MULTI}: four threads send on one endpoint at once. The tcp plugin
 * declares only {@code SERIALIZED}, so the runtime serializes the calls ({@link ThreadPolicy#RUNTIME_LOCK}).
 * The responder is never given the caller's address: it answers through
 * {@link dev.conduit.Message#replyEndpoint()}, which the tcp plugin supports by naming each
 * message's sender.
 */
public final class MessagingApp {

    static final int REGION = 2;      // payload: an IPC handle; the responder adds 1 to every long in it
    static final int REGION_DONE = 3; // payload: the sum the responder read
    static final int COUNT = 4;       // payload: thread, sequence
    static final int COUNTED = 5;     // payload: messages counted, all in each thread's order
    static final int BYE = 9;

    static final int THREADS = 4;
    static final int PER_THREAD = 1000;
    static final int LONGS = 512;
    private static final Duration GUARD = Duration.ofSeconds(60);

    private MessagingApp() {
    }

    public static void main(String[] args) throws Exception {
        // Plugins from the class/module path and from CONDUIT_PLUGIN_PATH; tcp first for messages, memfd for memory.
        try (Conduit conduit = Conduit.builder().transports("tcp", "memfd").build()) {
            switch (args.length > 0 ? args[0] : "") {
                case "respond" -> respond(conduit);
                case "call" -> call(conduit, WorkerAddress.fromBytes(HexFormat.of().parseHex(args[1])));
                default -> {
                    System.err.println("usage: MessagingApp respond | call <responder address in hex>");
                    System.exit(2);
                }
            }
        }
    }

    private static void respond(Conduit conduit) {
        try (Worker worker = conduit.newWorker(ThreadMode.SERIALIZED)) {
            Endpoint[] caller = new Endpoint[1]; // the answers' endpoint, kept to see them handed to the transport
            AtomicBoolean bye = new AtomicBoolean();
            long[] nextSequence = new long[THREADS];
            AtomicLong counted = new AtomicLong();
            AtomicBoolean inOrder = new AtomicBoolean(true);
            worker.onMessage(REGION, m -> {
                long sum = 0;
                try (ImportedRegion region = conduit.importRegion(m.payloadToArray())) {
                    MemorySegment s = region.segment();
                    for (int i = 0; i < LONGS; i++) {
                        long v = s.getAtIndex(ValueLayout.JAVA_LONG, i);
                        sum += v;
                        s.setAtIndex(ValueLayout.JAVA_LONG, i, v + 1);
                    }
                }
                caller[0] = m.replyEndpoint();
                send(caller[0], REGION_DONE, sum);
            });
            worker.onMessage(COUNT, m -> {
                int thread = (int) m.payloadLong(0);
                if (m.payloadLong(8) != nextSequence[thread]++) inOrder.set(false);
                if (counted.incrementAndGet() == THREADS * PER_THREAD) {
                    caller[0] = m.replyEndpoint();
                    send(caller[0], COUNTED, inOrder.get() ? counted.get() : -1);
                }
            });
            worker.onMessage(BYE, m -> bye.set(true));
            System.out.println("ADDRESS " + HexFormat.of().formatHex(worker.address().toBytes()));
            System.out.flush();
            progressUntil(worker, bye::get, "the caller's goodbye");
            progressUntil(worker, () -> caller[0] == null || caller[0].pending() == 0, "replies to be handed to the transport");
        }
    }

    private static void call(Conduit conduit, WorkerAddress responder) throws InterruptedException {
        try (Worker worker = conduit.newWorker(ThreadMode.MULTI)) {
            ConcurrentHashMap<Integer, Long> replies = new ConcurrentHashMap<>();
            worker.onMessage(REGION_DONE, m -> replies.put(REGION_DONE, m.payloadLong(0)));
            worker.onMessage(COUNTED, m -> replies.put(COUNTED, m.payloadLong(0)));
            Endpoint endpoint = worker.connect(responder);
            System.out.println("transport " + endpoint.transport() + ", thread policy " + worker.threadPolicy());

            try (Region region = conduit.pool("memfd").allocate(LONGS * 8L)) {
                long sum = 0;
                for (int i = 0; i < LONGS; i++) {
                    region.segment().setAtIndex(ValueLayout.JAVA_LONG, i, i * 3L);
                    sum += i * 3L;
                }
                endpoint.send(REGION, MemorySegment.ofArray(region.exportHandle()));
                progressUntil(worker, () -> replies.containsKey(REGION_DONE), "the responder's answer about the region");
                boolean incremented = true;
                for (int i = 0; i < LONGS; i++) incremented &= region.segment().getAtIndex(ValueLayout.JAVA_LONG, i) == i * 3L + 1;
                System.out.println("region: responder read sum " + replies.get(REGION_DONE) + " (expected " + sum + "), its writes "
                        + (incremented ? "arrived" : "DID NOT arrive"));
            }

            Thread[] senders = new Thread[THREADS];
            for (int t = 0; t < THREADS; t++) {
                long thread = t;
                senders[t] = Thread.ofPlatform().start(() -> {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment payload = arena.allocate(16);
                        for (long seq = 0; seq < PER_THREAD; seq++) {
                            payload.set(ValueLayout.JAVA_LONG, 0, thread);
                            payload.set(ValueLayout.JAVA_LONG, 8, seq);
                            endpoint.send(COUNT, payload);
                            worker.progress();
                        }
                    }
                });
            }
            for (Thread t : senders) t.join();
            progressUntil(worker, () -> replies.containsKey(COUNTED), "the responder's count");
            System.out.println("multi: " + THREADS + " threads sent " + THREADS * PER_THREAD + ", responder counted "
                    + replies.get(COUNTED) + " in each thread's order");

            endpoint.send(BYE, MemorySegment.NULL);
            progressUntil(worker, () -> endpoint.pending() == 0, "the goodbye to be handed to the transport");
        }
    }

    private static void send(Endpoint endpoint, int id, long value) {
        endpoint.send(id, MemorySegment.ofArray(new long[]{value}));
    }

    private static void progressUntil(Worker worker, BooleanSupplier done, String what) {
        long deadline = System.nanoTime() + GUARD.toNanos();
        while (!done.getAsBoolean()) {
            if (worker.progress() == 0) Thread.onSpinWait(); // nothing arrived: a spin-wait hint, as busy pollers give
            if (System.nanoTime() > deadline) throw new IllegalStateException("gave up after " + GUARD + " waiting for " + what);
        }
    }
}
