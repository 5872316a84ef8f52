package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.WorkerAddress;
import dev.conduit.it.process.CommandLoop;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

import static dev.conduit.it.transport.AtomicsCoordination.DATA;
import static dev.conduit.it.transport.AtomicsCoordination.FIRST;
import static dev.conduit.it.transport.AtomicsCoordination.NUMBERED;
import static dev.conduit.it.transport.AtomicsCoordination.REGION_SIZE;
import static dev.conduit.it.transport.AtomicsCoordination.SECOND;
import static dev.conduit.it.transport.AtomicsCoordination.SEQUENCE;

/**
 * A child JVM that is one process of {@link AtomicsCoordination}, driven by
 * {@link AtomicsCoordinationTest} over {@link CommandLoop}; its Conduit takes
 * {@code CONDUIT_SHARED_DIR} from the environment, as an application's does.
 *
 * <pre>
 * coordinator &lt;plugin&gt;                 a coordinator → address=&lt;hex&gt;
 * word &lt;offset&gt;                        the coordinator's word, read here → value=…
 * client &lt;plugin&gt; &lt;address hex&gt;       a client of that coordinator → session=…
 * count &lt;threads&gt; &lt;n&gt;                 each thread fetch-adds SEQUENCE n times → rising=true|false ns_per_fetch_add=&lt;wall time per fetch-add&gt;
 * locked &lt;threads&gt; &lt;n&gt;                each thread takes the lock n times, adds 1 to FIRST and SECOND → torn=&lt;entries that found them apart&gt;
 * slots &lt;threads&gt; &lt;n&gt;                 each thread claims a slot and releases it n times → full=&lt;claims that found none free&gt;
 * hold                                 takes the lock, adds 1 to FIRST only, claims a slot → slot=…
 * closeWorker                          closes the client's worker only: the process, and its identity region, live on
 * repair                               takes the lock (waiting), makes SECOND equal FIRST, gives it back → first=… second=…
 * publish &lt;n&gt; &lt;size&gt;                   n times: puts a record of size bytes in a ring at DATA, its first, middle and last words its number, then fetch-adds SEQUENCE (no flush) → published=n
 * </pre>
 */
public final class AtomicsCoordinationPeer {

    /** How many records of {@code size} bytes the publication's ring after DATA holds. */
    static long records(long size) {
        return (REGION_SIZE - DATA) / size;
    }

    /** The words of a record of {@code size} bytes that hold its number (the first, one in the middle, the last); the rest is left as it was. */
    static long[] markedWords(long size) {
        return new long[]{0, size / 2 & ~7L, size - 8};
    }

    private AtomicsCoordinationPeer() {
    }

    public static void main(String[] args) {
        AtomicsCoordination.Coordinator[] coordinator = {null};
        AtomicsCoordination.Client[] client = {null};
        new CommandLoop()
                .on("coordinator", a -> {
                    coordinator[0] = new AtomicsCoordination.Coordinator(Conduit.builder().transports(a.get(0)).build(), a.get(0));
                    return "address=" + HexFormat.of().formatHex(coordinator[0].address().toBytes());
                })
                .on("word", a -> "value=" + AtomicsCoordination.word(coordinator[0].words(), Long.parseLong(a.get(0))))
                .on("client", a -> {
                    client[0] = new AtomicsCoordination.Client(Conduit.builder().transports(a.get(0)).build(), a.get(0),
                            WorkerAddress.fromBytes(HexFormat.of().parseHex(a.get(1))));
                    return "session=" + client[0].session();
                })
                .on("count", a -> {
                    AtomicsCoordination.Client c = client[0];
                    long n = Long.parseLong(a.get(1));
                    AtomicLong falling = new AtomicLong();
                    long start = System.nanoTime();
                    inThreads(Integer.parseInt(a.get(0)), t -> () -> {
                        long previous = Long.MIN_VALUE;
                        for (long i = 0; i < n; i++) {
                            long v = c.endpoint().fetchAdd(c.words(), SEQUENCE, 1);
                            if (v <= previous) falling.incrementAndGet();
                            previous = v;
                        }
                    });
                    long elapsed = System.nanoTime() - start;
                    return "rising=" + (falling.get() == 0) + " ns_per_fetch_add=" + elapsed / (n * Integer.parseInt(a.get(0)));
                })
                .on("locked", a -> {
                    AtomicsCoordination.Client c = client[0];
                    long n = Long.parseLong(a.get(1));
                    AtomicLong torn = new AtomicLong();
                    inThreads(Integer.parseInt(a.get(0)), t -> () -> {
                        for (long i = 0; i < n; i++) {
                            c.lock();
                            long[] d = c.data();
                            if (d[0] != d[1]) torn.incrementAndGet();
                            c.putWord(FIRST, d[0] + 1);
                            c.putWord(SECOND, d[1] + 1);
                            c.unlock();
                        }
                    });
                    return "torn=" + torn.get();
                })
                .on("slots", a -> {
                    AtomicsCoordination.Client c = client[0];
                    long n = Long.parseLong(a.get(1));
                    AtomicLong full = new AtomicLong();
                    inThreads(Integer.parseInt(a.get(0)), t -> () -> {
                        for (long i = 0; i < n; i++) {
                            int slot = c.claimSlot();
                            if (slot < 0) {
                                full.incrementAndGet();
                                continue;
                            }
                            c.releaseSlot(slot);
                        }
                    });
                    return "full=" + full.get();
                })
                .on("hold", a -> {
                    AtomicsCoordination.Client c = client[0];
                    c.lock();
                    c.putWord(FIRST, c.data()[0] + 1); // dies here, between the two writes of its critical section
                    return "slot=" + c.claimSlot();
                })
                .on("closeWorker", a -> {
                    client[0].closeWorker();
                    return "";
                })
                .on("repair", a -> {
                    AtomicsCoordination.Client c = client[0];
                    c.lock();
                    long[] d = c.data();
                    if (d[0] != d[1]) c.putWord(SECOND, d[0]);
                    c.unlock();
                    return "first=" + d[0] + " second=" + d[1];
                })
                .on("publish", a -> {
                    AtomicsCoordination.Client c = client[0];
                    long n = Long.parseLong(a.get(0));
                    long size = Long.parseLong(a.get(1));
                    long records = records(size);
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment source = arena.allocate(size, 64);
                        for (long i = 0; i < n; i++) {
                            // The record's number is the sequence value that announces it: the one this fetch-add makes.
                            long sequence = c.endpoint().fetchAdd(c.words(), NUMBERED, 1) + 1;
                            for (long at : markedWords(size)) source.set(ValueLayout.JAVA_LONG, at, sequence);
                            c.endpoint().put(source, c.words(), DATA + size * ((sequence - 1) % records));
                            c.endpoint().fetchAdd(c.words(), SEQUENCE, 1);
                        }
                    }
                    return "published=" + n;
                })
                .run();
    }

    private static void inThreads(int threads, IntFunction<Runnable> body) throws Exception {
        List<Thread> started = new ArrayList<>();
        List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        for (int t = 0; t < threads; t++) {
            Runnable r = body.apply(t);
            started.add(Thread.ofPlatform().name("app-" + t).start(() -> {
                try {
                    r.run();
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        for (Thread t : started) t.join();
        if (!failures.isEmpty()) {
            Exception e = new Exception("a thread failed: " + failures.getFirst(), failures.getFirst());
            failures.stream().skip(1).forEach(e::addSuppressed);
            throw e;
        }
    }
}
