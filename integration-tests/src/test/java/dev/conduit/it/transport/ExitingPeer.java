package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ThreadMode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;

/**
 * A process that holds a worker, an endpoint to the test's worker and an exported region, and
 * ends without closing any of it ({@link ExitPathsTest}). Arguments: plugin, how it ends:
 * {@code return} (main returns, then the thread that progresses the worker does), {@code oom} (a
 * handler throws {@code OutOfMemoryError}, which kills the progressing thread), {@code hook} (a
 * shutdown hook closes the Conduit on SIGTERM while the other thread progresses and awaits). Its
 * stdout: {@code ADDR <worker address> <region handle>}, then {@code RUNNING}; it reads the test
 * worker's address on stdin, then a line the test writes once its own connect to this worker
 * returned: in mode {@code return} this process exits a second after, and a test descheduled for
 * that second between its address and its connect found the peer dead already, so its connect threw.
 */
public final class ExitingPeer {

    /** The id of the message whose handler throws {@code OutOfMemoryError} in mode {@code oom}. */
    static final int FATAL = 9;

    static volatile Object sink;

    public static void main(String[] a) throws Exception {
        String plugin = a[0];
        String how = a[1];
        Conduit conduit = Setup.conduit(Path.of(System.getenv("CONDUIT_SHARED_DIR")), plugin, plugin + ".liveness.interval=5ms");
        Worker worker = conduit.newWorker(ThreadMode.MULTI);
        Region region = conduit.pool(plugin).allocate(1 << 16);
        worker.onMessage(FATAL, m -> {
            long[][] held = new long[64][];
            for (int i = 0; ; i++) { // -Xmx256m: the second array does not fit
                held[i % held.length] = new long[1 << 24];
                sink = held;
            }
        });
        System.out.println("ADDR " + HexFormat.of().formatHex(worker.address().toBytes()) + " " + HexFormat.of().formatHex(region.exportHandle()));
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        WorkerAddress test = WorkerAddress.fromBytes(HexFormat.of().parseHex(in.readLine().trim()));
        Endpoint endpoint = worker.connect(test, (ep, cause) -> { });
        endpoint.send(1, MemorySegment.ofArray(new byte[8]));
        in.readLine(); // the test's connect to this worker returned: this process may end now
        if (how.equals("hook")) Runtime.getRuntime().addShutdownHook(new Thread(conduit::close, "closes-conduit"));
        long end = System.nanoTime() + Duration.ofSeconds(1).toNanos();
        Thread.ofPlatform().name("progresses").start(() -> {
            // Mode "return" stops progressing (without closing) a second after main returned; the others go on.
            while (!how.equals("return") || System.nanoTime() < end) {
                if (worker.progress() == 0) worker.await(Duration.ofMillis(100));
            }
        });
        System.out.println("RUNNING");
        System.out.flush();
    }
}
