package dev.conduit.benchmarks.compare;

import dev.conduit.benchmarks.PeerJvm;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * A peer of benchmarks/compare.sh: the JDK's {@link SocketChannel} over a Unix-domain socket
 * between two JVMs. Run without arguments it listens on a socket in a fresh temporary directory,
 * starts the other JVM ({@code UnixSocketPeer --echo PATH}, same java, class path and the JVM options that shape a
 * measurement: {@link PeerJvm}) with {@link ProcessBuilder}, and measures, for 8 B, 4 KiB, 64 KiB and 1 MiB:
 * <ul>
 *   <li>{@code am_lat}: ping-pong, the peer echoes each message; one-way latency = round trip / 2,
 *       each round trip timed with {@link System#nanoTime}; the median is printed;</li>
 *   <li>{@code am_bw}: a one-way stream; the peer reads everything and answers one byte at the end;
 *       MB/s = bytes / elapsed (MB = 10^6 bytes).</li>
 * </ul>
 * Blocking channels, both sides one thread. Output: tab-separated lines
 * {@code uds - TEST SIZE p50_us|MBps VALUE}, as the other peers of compare.sh print.
 */
public final class UnixSocketPeer {

    private static final int[] SIZES = {8, 4096, 65536, 1 << 20};
    private static final int PING = 1, STREAM = 2, BYE = 0;

    private UnixSocketPeer() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("--echo")) {
            echo(Path.of(args[1]));
            return;
        }
        Path dir = Files.createTempDirectory("conduit-uds-");
        Path socket = dir.resolve("s");
        // Also when compare.sh's timeout ends this JVM (SIGTERM runs no finally); deleted in reverse order, the socket first.
        dir.toFile().deleteOnExit();
        socket.toFile().deleteOnExit();
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(socket));
            Process peer = new ProcessBuilder(PeerJvm.command(UnixSocketPeer.class, "--echo", socket.toString())).inheritIO().start();
            try (SocketChannel ch = accept(server, peer)) {
                // Warm-ups as conduit perf's: at least 2 s before the first measurement, 300 ms before the others.
                long warmUntil = System.nanoTime() + 2_000_000_000L;
                for (int size : SIZES) {
                    int n = size <= 4096 ? 50_000 : size <= 65536 ? 10_000 : 1_000;
                    do {
                        pingPong(ch, size, n / 5);
                    } while (System.nanoTime() - warmUntil < 0);
                    warmUntil = System.nanoTime() + 300_000_000L;
                    double[] oneWay = pingPong(ch, size, n);
                    Arrays.sort(oneWay);
                    System.out.printf("uds\t-\tam_lat\t%d\tp50_us\t%.4f%n", size, oneWay[n / 2]);
                }
                for (int size : SIZES) {
                    long bytes = size <= 8 ? 4_000_000L : 1L << 30;
                    int n = (int) (bytes / size);
                    long streamWarmUntil = System.nanoTime() + 300_000_000L;
                    do {
                        stream(ch, size, n / 5);
                    } while (System.nanoTime() - streamWarmUntil < 0);
                    long t0 = System.nanoTime();
                    stream(ch, size, n);
                    double seconds = (System.nanoTime() - t0) / 1e9;
                    System.out.printf("uds\t-\tam_bw\t%d\tMBps\t%.1f%n", size, (double) n * size / seconds / 1e6);
                }
                header(ch, BYE, 0, 0);
            } catch (IOException e) {
                throw peer.isAlive() ? e : new IllegalStateException("the echo JVM (pid " + peer.pid() + ", " + PeerJvm.howItEnded(peer)
                        + ") ended during the measurement: " + e.getMessage() + "; its output, above, says why if it failed by itself", e);
            }
            if (!peer.waitFor(30, TimeUnit.SECONDS)) {
                peer.destroy();
            }
        } finally {
            Files.deleteIfExists(socket);
            Files.deleteIfExists(dir);
        }
    }

    /**
     * The echo JVM's connection, once it has made it; a blocking accept would wait for good for an echo that died first
     * (a JVM option it cannot start with, a class path it cannot read, a kill).
     */
    static SocketChannel accept(ServerSocketChannel server, Process peer) throws IOException, InterruptedException {
        server.configureBlocking(false);
        SocketChannel ch;
        while ((ch = server.accept()) == null) {
            if (!peer.isAlive()) {
                throw new IllegalStateException("the echo JVM (pid " + peer.pid() + ", " + PeerJvm.howItEnded(peer) + ") ended before it connected to "
                        + server.getLocalAddress() + "; its output, above, says why");
            }
            Thread.sleep(1);
        }
        return ch; // blocking, whatever the server's mode
    }

    private static double[] pingPong(SocketChannel ch, int size, int n) throws IOException {
        header(ch, PING, size, n);
        ByteBuffer out = ByteBuffer.allocateDirect(size);
        ByteBuffer in = ByteBuffer.allocateDirect(size);
        double[] oneWay = new double[n];
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            out.clear();
            out.put(0, (byte) i);
            writeFully(ch, out);
            in.clear();
            readFully(ch, in);
            oneWay[i] = (System.nanoTime() - t0) / 2.0 / 1000.0;
        }
        return oneWay;
    }

    private static void stream(SocketChannel ch, int size, int n) throws IOException {
        header(ch, STREAM, size, n);
        ByteBuffer out = ByteBuffer.allocateDirect(size);
        for (int i = 0; i < n; i++) {
            out.clear();
            writeFully(ch, out);
        }
        readFully(ch, ByteBuffer.allocate(1));
    }

    private static void header(SocketChannel ch, int mode, int size, int n) throws IOException {
        writeFully(ch, ByteBuffer.allocate(12).putInt(mode).putInt(size).putInt(n).flip());
    }

    private static void echo(Path socket) throws IOException {
        try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            ByteBuffer head = ByteBuffer.allocate(12);
            while (true) {
                head.clear();
                readFully(ch, head);
                int mode = head.getInt(0), size = head.getInt(4), n = head.getInt(8);
                if (mode == BYE) {
                    return;
                }
                ByteBuffer buf = ByteBuffer.allocateDirect(size);
                if (mode == PING) {
                    for (int i = 0; i < n; i++) {
                        buf.clear();
                        readFully(ch, buf);
                        buf.flip();
                        writeFully(ch, buf);
                    }
                } else {
                    ByteBuffer big = ByteBuffer.allocateDirect(Math.max(size, 1 << 20));
                    long left = (long) size * n;
                    while (left > 0) {
                        big.clear();
                        if (left < big.capacity()) {
                            big.limit((int) left);
                        }
                        int r = ch.read(big);
                        if (r < 0) {
                            throw new IOException("peer closed");
                        }
                        left -= r;
                    }
                    writeFully(ch, ByteBuffer.allocate(1));
                }
            }
        }
    }

    private static void writeFully(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    private static void readFully(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new IOException("peer closed");
            }
        }
    }
}
