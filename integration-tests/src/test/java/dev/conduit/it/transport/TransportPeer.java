package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.Endpoint;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.WorkerAddress;
import dev.conduit.it.process.CommandLoop;
import dev.conduit.it.process.OpenResources;
import dev.conduit.it.process.Patterns;
import dev.conduit.spi.ThreadMode;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * The main class of a child JVM in the transport tests: workers ({@link WorkerHost}, each with its
 * own {@code Conduit}), endpoints, verifying receivers, senders and RMA targets, driven by
 * {@link RemoteTransportPeer} over {@link CommandLoop}. Long operations are jobs: they start at
 * once and are joined later, so the test can drive several processes at the same time.
 *
 * <pre>
 * worker &lt;w&gt; &lt;plugin&gt; &lt;mode&gt; [key=value…]   a Conduit (transports=plugin, keys) and a worker of it → address=&lt;hex&gt;
 * connect &lt;w&gt; &lt;ep&gt; &lt;address hex&gt;           endpoint ep of w; its failures are recorded
 * receive &lt;w&gt;                             a {@link Traffic.Receiver} for DATA on w
 * echo &lt;w&gt; &lt;ep&gt;                           a Receiver for DATA on w that sends each message back on ep as ECHO
 * reply &lt;w&gt;                               a Receiver for DATA on w that sends each message back as ECHO through its replyEndpoint()
 * stream &lt;job&gt; &lt;w&gt; &lt;ep&gt; &lt;s&gt; &lt;profile&gt; &lt;count&gt; &lt;maxPending&gt;   job: {@link Traffic#stream}, then drain → sent=… pendingAtIssue=…
 * pingpong &lt;job&gt; &lt;w&gt; &lt;ep&gt; &lt;s&gt; &lt;profile&gt; &lt;count&gt;         job: {@link Traffic#pingPong} → roundTrips=… echoes=&lt;summary&gt;
 * asleep &lt;job&gt; &lt;w&gt; &lt;count&gt; &lt;guardMillis&gt;    job: {@link Traffic#takeAsleep} until w's DATA receiver took count messages
 *                                          → messages=… awaits=… ranOut=… wokeEarly=…
 * trickle &lt;job&gt; &lt;w&gt; &lt;ep&gt; &lt;s&gt; &lt;count&gt; &lt;seed&gt; [ack]   job: count SMALL messages with random pauses (none, spin, yield, park)
 *                                          between them; with ack (a region's name), each waits until the peer has counted it
 *                                          (the region's word at 0 reaches its number) before the pause
 * status &lt;job&gt;                             done=false stage=… sent=… (sends returned, of a stream), or done=true and the result
 * join &lt;job&gt; &lt;millis&gt;                      waits at most millis, then as status
 * stats &lt;w&gt;                                the DATA receiver's summary
 * failures &lt;w&gt;                             count=… list=ep@nanoTime@type@reason@message,… (message with _ for blanks)
 *                                          progressErrors=… firstProgressError=&lt;its stack trace, UTF-8 as hex&gt;|-
 * pause &lt;w&gt; | resume &lt;w&gt;                   stop / resume progressing between tasks
 * region &lt;w&gt; &lt;name&gt; &lt;size&gt;                a region of the worker's conduit's pool → handle=&lt;hex&gt;
 * fill &lt;name&gt; &lt;seed&gt; | crc &lt;name&gt; → crc=…  | word &lt;name&gt; &lt;offset&gt; → value=…
 * adder &lt;job&gt; &lt;name&gt; &lt;offset&gt; &lt;count&gt;     job on a thread of its own: once the word after it is not 0, count atomic getAndAdd(1) on the word
 * files                                    names in the shared directory, as this process sees it
 * resources                                what this process holds open ({@link OpenResources}: descriptors, mappings)
 * spawn                                    starts a process that outlives this one ({@code sleep 600}) → pid=&lt;pid&gt;
 * close &lt;w&gt;                                closes the worker and its conduit
 * </pre>
 */
public final class TransportPeer {

    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    private final Map<String, WorkerHost> hosts = new ConcurrentHashMap<>();
    private final Map<String, Traffic.Receiver> receivers = new ConcurrentHashMap<>();
    private final Map<String, Traffic.Receiver> echoes = new ConcurrentHashMap<>();
    private final Map<String, Job> jobs = new ConcurrentHashMap<>();
    private final Map<String, Region> regions = new ConcurrentHashMap<>();
    private final Map<String, Pool> pools = new ConcurrentHashMap<>();

    /** A long operation: its result once done, meanwhile what it is doing and, for a stream, how many sends returned. */
    private static final class Job {
        volatile Future<String> future;
        volatile String stage = "queued";
        final AtomicLong sent = new AtomicLong();
    }

    private TransportPeer() {
    }

    public static void main(String[] args) {
        TransportPeer p = new TransportPeer();
        new CommandLoop()
                .on("worker", p::worker)
                .on("connect", a -> {
                    p.host(a.get(0)).connect(a.get(1), WorkerAddress.fromBytes(HexFormat.of().parseHex(a.get(2))));
                    return "";
                })
                .on("receive", a -> {
                    Traffic.Receiver r = new Traffic.Receiver();
                    WorkerHost h = p.host(a.get(0));
                    h.run(() -> h.worker().onMessage(Traffic.DATA, r));
                    p.receivers.put(a.get(0), r);
                    return "";
                })
                .on("echo", a -> {
                    WorkerHost h = p.host(a.get(0));
                    String ep = a.get(1);
                    Traffic.Receiver r = new Traffic.Receiver(m -> h.endpoint(ep).send(Traffic.ECHO, m.header(), m.payload()));
                    h.run(() -> h.worker().onMessage(Traffic.DATA, r));
                    p.receivers.put(a.get(0), r);
                    return "";
                })
                .on("reply", a -> {
                    WorkerHost h = p.host(a.get(0));
                    Traffic.Receiver r = new Traffic.Receiver(m -> m.replyEndpoint().send(Traffic.ECHO, m.header(), m.payload()));
                    h.run(() -> h.worker().onMessage(Traffic.DATA, r));
                    p.receivers.put(a.get(0), r);
                    return "";
                })
                .on("stream", p::stream)
                .on("pingpong", p::pingPong)
                .on("trickle", p::trickle)
                .on("asleep", p::asleep)
                .on("status", a -> p.status(a.get(0), 0))
                .on("join", a -> p.status(a.get(0), Long.parseLong(a.get(1))))
                .on("stats", a -> {
                    Traffic.Receiver r = p.receivers.get(a.get(0));
                    if (r == null) throw new IllegalArgumentException("no receiver on worker " + a.get(0));
                    return r.summary();
                })
                .on("failures", a -> {
                    List<WorkerHost.Failure> f = p.host(a.get(0)).failures();
                    String list = f.stream().map(x -> x.endpoint() + "@" + x.nanoTime() + "@" + x.type() + "@" + x.reason() + "@"
                            + x.message().replaceAll("[\\s,@]+", "_")).collect(Collectors.joining(","));
                    List<Throwable> errors = p.host(a.get(0)).progressErrors();
                    return "count=" + f.size() + " list=" + (list.isEmpty() ? "-" : list) + " progressErrors=" + errors.size()
                            + " firstProgressError=" + (errors.isEmpty() ? "-" : HexFormat.of().formatHex(stackTrace(errors.getFirst())));
                })
                .on("pause", a -> {
                    p.host(a.get(0)).pause(true);
                    return "";
                })
                .on("resume", a -> {
                    p.host(a.get(0)).pause(false);
                    return "";
                })
                .on("region", p::region)
                .on("fill", a -> {
                    Patterns.fill(p.region(a.get(0)).segment(), Long.parseLong(a.get(1)));
                    return "";
                })
                .on("crc", a -> "crc=" + crc(p.region(a.get(0)).segment()))
                .on("word", a -> "value=" + (long) WORD.getVolatile(p.region(a.get(0)).segment(), Long.parseLong(a.get(1))))
                .on("adder", p::adder)
                .on("files", a -> "files=" + files(Path.of(System.getenv("CONDUIT_SHARED_DIR"))))
                .on("resources", a -> OpenResources.ofThisProcess().format())
                .on("spawn", a -> {
                    try {
                        return "pid=" + new ProcessBuilder("sleep", "600").redirectErrorStream(true)
                                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().pid();
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                })
                .on("close", a -> {
                    p.hosts.remove(a.get(0)).close();
                    return "";
                })
                .run();
    }

    private String worker(List<String> a) {
        String w = a.get(0);
        String plugin = a.get(1);
        ThreadMode mode = ThreadMode.valueOf(a.get(2));
        ConduitBuilder b = Conduit.builder().transports(plugin);
        for (String kv : a.subList(3, a.size())) {
            int eq = kv.indexOf('=');
            b.set(kv.substring(0, eq), kv.substring(eq + 1));
        }
        Conduit conduit = b.build();
        WorkerHost h;
        try {
            h = WorkerHost.start(w, conduit, mode, true);
        } catch (RuntimeException e) {
            conduit.close();
            throw e;
        }
        if (hosts.putIfAbsent(w, h) != null) {
            h.close();
            throw new IllegalArgumentException("worker '" + w + "' exists");
        }
        return "address=" + HexFormat.of().formatHex(h.address().toBytes());
    }

    private WorkerHost host(String w) {
        WorkerHost h = hosts.get(w);
        if (h == null) throw new IllegalArgumentException("no worker '" + w + "'; known: " + hosts.keySet());
        return h;
    }

    private String stream(List<String> a) {
        String job = a.get(0);
        WorkerHost h = host(a.get(1));
        String ep = a.get(2);
        int s = Integer.parseInt(a.get(3));
        Traffic.Profile profile = Traffic.Profile.valueOf(a.get(4));
        long count = Long.parseLong(a.get(5));
        long maxPending = Long.parseLong(a.get(6));
        startJob(job, h, j -> () -> {
            long[] atIssue = {0};
            long t0 = System.nanoTime();
            long sent = Traffic.stream(h.worker(), h.endpoint(ep), s, profile, 0, count, maxPending, j.sent, pending -> {
                atIssue[0] = pending;
                j.stage = "issued pendingAtIssue=" + pending;
            });
            Traffic.drain(h.worker(), h.endpoint(ep));
            long nanos = System.nanoTime() - t0;
            return "sent=" + sent + " pendingAtIssue=" + atIssue[0] + " failed=" + h.endpoint(ep).isFailed() + " nanos=" + nanos;
        });
        return "";
    }

    private String pingPong(List<String> a) {
        String job = a.get(0);
        WorkerHost h = host(a.get(1));
        String ep = a.get(2);
        int s = Integer.parseInt(a.get(3));
        Traffic.Profile profile = Traffic.Profile.valueOf(a.get(4));
        long count = Long.parseLong(a.get(5));
        Traffic.Receiver echo = new Traffic.Receiver();
        h.run(() -> h.worker().onMessage(Traffic.ECHO, echo));
        echoes.put(a.get(1), echo);
        startJob(job, h, j -> () -> {
            long t0 = System.nanoTime();
            long done = Traffic.pingPong(h.worker(), h.endpoint(ep), s, profile, count, echo);
            long nanos = System.nanoTime() - t0;
            return "roundTrips=" + done + " nanos=" + nanos + " " + echo.summary();
        });
        return "";
    }

    private String trickle(List<String> a) {
        String job = a.get(0);
        WorkerHost h = host(a.get(1));
        String ep = a.get(2);
        int s = Integer.parseInt(a.get(3));
        long count = Long.parseLong(a.get(4));
        long seed = Long.parseLong(a.get(5));
        MemorySegment acks = a.size() > 6 ? region(a.get(6)).segment() : null;
        startJob(job, h, j -> () -> {
            SplittableRandom random = new SplittableRandom(seed);
            Endpoint e = h.endpoint(ep);
            MemorySegment header = Traffic.newHeader();
            long t0 = System.nanoTime();
            for (long n = 0; n < count; n++) {
                e.send(Traffic.DATA, Traffic.header(header, s, Traffic.Profile.SMALL, n), Traffic.payload(s, Traffic.Profile.SMALL, n));
                if (acks != null) {
                    while ((long) WORD.getVolatile(acks, 0L) <= n && !e.isFailed()) {
                        if (e.pending() > 0) h.worker().progress();
                        Thread.onSpinWait();
                    }
                }
                switch (random.nextInt(8)) {
                    case 4 -> {
                        long until = System.nanoTime() + random.nextLong(20_000);
                        while (System.nanoTime() < until) Thread.onSpinWait();
                    }
                    case 5 -> Thread.yield();
                    case 6, 7 -> LockSupport.parkNanos(random.nextLong(1_000, 200_000));
                    default -> { }
                }
                if (e.pending() > 0) h.worker().progress();
            }
            Traffic.drain(h.worker(), e);
            return "sent=" + count + " nanos=" + (System.nanoTime() - t0) + " failed=" + e.isFailed();
        });
        return "";
    }

    private String asleep(List<String> a) {
        String job = a.get(0);
        WorkerHost h = host(a.get(1));
        Traffic.Receiver r = receivers.get(a.get(1));
        if (r == null) throw new IllegalArgumentException("no receiver on worker " + a.get(1));
        long count = Long.parseLong(a.get(2));
        Duration guard = Duration.ofMillis(Long.parseLong(a.get(3)));
        startJob(job, h, j -> () -> Traffic.takeAsleep(h.worker(), r, count, guard).summary());
        return "";
    }

    private void startJob(String name, WorkerHost h, Function<Job, Callable<String>> body) {
        Job j = new Job();
        if (jobs.putIfAbsent(name, j) != null) throw new IllegalArgumentException("job '" + name + "' exists");
        Callable<String> c = body.apply(j);
        j.future = h.submit(() -> {
            j.stage = "running";
            return c.call();
        });
    }

    private String status(String name, long millis) throws InterruptedException {
        Job j = jobs.get(name);
        if (j == null) throw new IllegalArgumentException("no job '" + name + "'; known: " + jobs.keySet());
        try {
            String result = millis > 0 ? j.future.get(millis, TimeUnit.MILLISECONDS) : (j.future.isDone() ? j.future.get() : null);
            if (result == null) return running(j);
            return "done=true " + result;
        } catch (TimeoutException e) {
            return running(j);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            c.printStackTrace();
            return "done=true error=" + (c.getClass().getSimpleName() + ":" + c.getMessage()).replace(' ', '_');
        }
    }

    private static String running(Job j) {
        return "done=false stage=" + j.stage.replace(' ', ',') + " sent=" + j.sent.get();
    }

    private String region(List<String> a) {
        WorkerHost h = host(a.get(0));
        String name = a.get(1);
        long size = Long.parseLong(a.get(2));
        String plugin = h.conduit().selectedPlugins().getFirst();
        Pool pool = pools.computeIfAbsent(a.get(0), k -> h.conduit().pool(plugin));
        Region r = pool.allocate(size);
        if (regions.putIfAbsent(name, r) != null) {
            r.close();
            throw new IllegalArgumentException("region '" + name + "' exists");
        }
        return "handle=" + HexFormat.of().formatHex(r.exportHandle());
    }

    private Region region(String name) {
        Region r = regions.get(name);
        if (r == null) throw new IllegalArgumentException("no region '" + name + "'; known: " + regions.keySet());
        return r;
    }

    private String adder(List<String> a) {
        String job = a.get(0);
        MemorySegment s = region(a.get(1)).segment();
        long offset = Long.parseLong(a.get(2));
        long count = Long.parseLong(a.get(3));
        FutureTask<String> f = new FutureTask<>(() -> {
            while ((long) WORD.getVolatile(s, offset + 8) == 0) Thread.onSpinWait(); // the start flag, set by the peer
            for (long i = 0; i < count; i++) WORD.getAndAdd(s, offset, 1L);
            return "added=" + count;
        });
        Job j = new Job();
        j.future = f;
        j.stage = "running";
        if (jobs.putIfAbsent(job, j) != null) throw new IllegalArgumentException("job '" + job + "' exists");
        Thread t = new Thread(f, "adder-" + job);
        t.setDaemon(true);
        t.start();
        return "";
    }

    private static byte[] stackTrace(Throwable t) {
        StringWriter text = new StringWriter();
        t.printStackTrace(new PrintWriter(text));
        return text.toString().getBytes(StandardCharsets.UTF_8);
    }

    static String crc(MemorySegment s) {
        CRC32C crc = new CRC32C();
        crc.update(s.asByteBuffer());
        return Long.toHexString(crc.getValue());
    }

    private static String files(Path directory) throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            String names = files.map(p -> p.getFileName().toString()).sorted().collect(Collectors.joining(","));
            return names.isEmpty() ? "-" : names;
        }
    }
}
