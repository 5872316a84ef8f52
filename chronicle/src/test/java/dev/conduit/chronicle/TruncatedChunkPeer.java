package dev.conduit.chronicle;

import dev.conduit.Conduit;
import dev.conduit.Region;
import net.openhft.chronicle.bytes.BytesStore;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * The child JVM of {@link TruncatedChunkTest}: allocates a posix region, takes a Chronicle view of
 * it, truncates the region's chunk file to 0 bytes (what any same-user peer may do to a posix
 * chunk), then makes one access through the view ({@code cas}, {@code cas-int} or {@code read}, the argument after
 * the shared directory) and prints {@code SURVIVED <what it threw>}. A JVM that dies of the
 * access's {@code SIGBUS} prints nothing after {@code TRUNCATED}.
 */
public final class TruncatedChunkPeer {

    private TruncatedChunkPeer() {
    }

    public static void main(String[] args) throws Exception {
        try (Conduit conduit = Conduits.posix(Path.of(args[0]))) {
            Region region = conduit.pool("posix").allocate(4096);
            BytesStore<?, Void> view = ChronicleViews.store(region);
            List<Path> chunks;
            try (Stream<Path> files = Files.walk(Path.of(args[0]))) {
                chunks = files.filter(f -> f.getFileName().toString().endsWith(".chunk")).toList();
            }
            if (chunks.size() != 1) throw new IllegalStateException("expected one chunk file, found " + chunks);
            try (RandomAccessFile file = new RandomAccessFile(chunks.get(0).toFile(), "rw")) {
                file.setLength(0);
            }
            System.out.println("TRUNCATED");
            System.out.flush();
            try {
                switch (args[1]) {
                    case "cas" -> view.compareAndSwapLong(0, 0, 1);
                    case "cas-int" -> view.compareAndSwapInt(0, 0, 1);
                    default -> view.readLong(0);
                }
                System.out.println("SURVIVED nothing thrown");
            } catch (Throwable t) {
                System.out.println("SURVIVED " + t);
            }
        }
    }
}
