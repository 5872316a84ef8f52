package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * A Conduit process whose shared directory fills up ({@code ENOSPC}): run by
 * {@link ResourceExhaustionTest} on a small tmpfs mounted in a mount namespace of its own. A worker
 * and a region made before the directory fills must keep working; what needs space afterwards
 * must fail with a Conduit exception and leave no file; once space is back, it works again.
 * Prints {@code key: value} lines. Argument: the shared directory.
 */
public final class FullDirectoryPeer {

    private FullDirectoryPeer() {
    }

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[0]);
        Path filler = shared.resolve("filler");
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports("posix").build();
             Arena arena = Arena.ofConfined()) {
            Worker survivor = conduit.newWorker(ThreadMode.SINGLE);
            long[] received = {0};
            survivor.onMessage(1, m -> received[0]++);
            Pool pool = conduit.pool("posix");
            Region region = pool.allocate(64 << 10);
            region.segment().fill((byte) 1);
            // A connection whose bounce ring exists before the directory fills: a 16 KiB message (over inline.max) made it.
            Endpoint self = survivor.connect(survivor.address());
            self.send(1, arena.allocate(16 << 10));
            // The receiver maps the ring on its mapping thread, so the message arrives after a number of calls no one can say.
            long guard = System.nanoTime() + 30_000_000_000L;
            while (received[0] == 0 && System.nanoTime() < guard) survivor.progress();
            System.out.println("ring-made: received " + received[0]);
            received[0] = 0;
            java.util.List<Path> filesBefore = list(shared);

            fill(filler);
            System.out.println("filled: yes");
            report("new-worker", () -> conduit.newWorker(ThreadMode.SINGLE));
            report("allocate", () -> pool.allocate(1 << 20));
            java.util.List<Path> added = new java.util.ArrayList<>(list(shared));
            added.removeAll(filesBefore);
            added.remove(filler);
            System.out.println("files-after-failures: " + added.size() + " " + added);

            // Survivors: the region made before, and a worker that sends to itself.
            region.segment().set(ValueLayout.JAVA_LONG, 0, 42);
            System.out.println("region-survived: " + (region.segment().get(ValueLayout.JAVA_LONG, 0) == 42));
            report("survivor-send", () -> {
                self.send(1, arena.allocate(64));
                for (int i = 0; i < 1000 && received[0] == 0; i++) survivor.progress();
                return "received " + received[0];
            });
            // The largest payload fills the ring's pages that the first large message never touched.
            report("survivor-large-send", () -> {
                self.send(1, arena.allocate(self.maxPayloadSize()));
                long until = System.nanoTime() + 30_000_000_000L;
                while (received[0] < 2 && System.nanoTime() < until) survivor.progress();
                return "received " + received[0] + ", endpoint failed: " + self.isFailed();
            });
            self.close();

            Files.delete(filler);
            report("allocate-after-space-freed", () -> pool.allocate(1 << 20));
            report("new-worker-after-space-freed", () -> conduit.newWorker(ThreadMode.SINGLE));
            region.close();
        }
        System.out.println("files-left: " + count(shared));
    }

    /** Writes until the file system is full. */
    private static void fill(Path filler) throws IOException {
        try (FileChannel channel = FileChannel.open(filler, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer block = ByteBuffer.allocate(64 << 10);
            while (true) {
                block.clear();
                channel.write(block);
            }
        } catch (IOException e) {
            // Judged by the free space, not the message, which is in the system's language.
            if (Files.getFileStore(filler).getUsableSpace() >= 64 << 10) throw e;
        }
    }

    private static void report(String step, Supplier<Object> action) {
        try {
            System.out.println(step + ": ok " + action.get());
        } catch (ConduitException e) {
            System.out.println(step + ": " + e.getClass().getSimpleName() + ": " + e.getMessage().replace('\n', ' '));
        } catch (RuntimeException | Error e) {
            System.out.println(step + ": UNEXPECTED " + e);
        }
    }

    private static java.util.List<Path> list(Path directory) throws IOException {
        try (Stream<Path> s = Files.list(directory)) {
            return s.sorted().toList();
        }
    }

    private static long count(Path directory) throws IOException {
        try (Stream<Path> s = Files.list(directory)) {
            return s.count();
        }
    }
}
