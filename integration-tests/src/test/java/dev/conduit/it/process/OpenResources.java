package dev.conduit.it.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * What a process holds open, from {@code /proc/self}: every descriptor, the descriptors on Conduit's
 * shared-memory files (posix chunks and leases, memfd leases, sockets and memfds, by name), socket
 * descriptors, and the mappings of posix chunk files and memfd chunks. Taken in a child by
 * {@link ConduitPeer} ({@code resources}) and parsed back with {@link #parse(String)}.
 *
 * @param fds              entries of {@code /proc/self/fd}, the listing's own left out
 * @param conduitFds       descriptors whose target's name starts with {@code conduit-posix-} or
 *                         {@code conduit-memfd-}, or is a {@code memfd:conduit-…}
 * @param socketFds        descriptors on sockets
 * @param conduitMappings  lines of {@code /proc/self/maps} that map a posix chunk file or a memfd chunk
 */
public record OpenResources(long fds, long conduitFds, long socketFds, long conduitMappings) {

    public static OpenResources ofThisProcess() {
        Map<Integer, String> descriptors = descriptorsOfThisProcess();
        long sockets = descriptors.values().stream().filter(target -> target.startsWith("socket:")).count();
        long conduit = descriptors.values().stream().filter(OpenResources::isConduitName).count();
        long mappings;
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
            mappings = lines.filter(OpenResources::isConduitName).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new OpenResources(descriptors.size(), conduit, sockets, mappings);
    }

    /**
     * Each descriptor of this process by number, with what it refers to ({@code /proc/self/fd});
     * the listing's own descriptor left out. Compared by {@link #openedSince(Map)}.
     */
    public static Map<Integer, String> descriptorsOfThisProcess() {
        Path listing = Path.of("/proc/self/fd");
        String ownDirectory = "/proc/" + ProcessHandle.current().pid() + "/fd";
        Map<Integer, String> descriptors = new TreeMap<>();
        try (Stream<Path> entries = Files.list(listing)) {
            for (Path fd : (Iterable<Path>) entries::iterator) {
                String target;
                try {
                    target = Files.readSymbolicLink(fd).toString();
                } catch (IOException e) {
                    continue; // closed since the listing was read: the listing's own, or another thread's
                }
                if (!target.equals(ownDirectory)) descriptors.put(Integer.parseInt(fd.getFileName().toString()), target);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return descriptors;
    }

    /**
     * The descriptors open now that {@code before} did not hold (by number and target), as
     * {@code number -> target}. A descriptor that another thread held for a moment when
     * {@code before} was taken, and has closed since, is in neither: a count of descriptors would
     * take its close for a descriptor freed, and hide a leak of one.
     */
    public static List<String> openedSince(Map<Integer, String> before) {
        return descriptorsOfThisProcess().entrySet().stream()
                .filter(e -> !e.getValue().equals(before.get(e.getKey())))
                .map(e -> e.getKey() + " -> " + e.getValue())
                .toList();
    }

    private static boolean isConduitName(String target) {
        // A closed mapping's placeholder: held for a second after the close, by design (Libc#mmap).
        if (target.contains("/memfd:conduit-closed-mapping")) return false;
        if (target.contains("/memfd:conduit-")) return true;
        int slash = target.lastIndexOf('/');
        String name = target.substring(slash + 1);
        return name.startsWith("conduit-posix-") || name.startsWith("conduit-memfd-");
    }

    /** {@code fds=… conduitFds=… socketFds=… conduitMappings=…} */
    public String format() {
        return "fds=" + fds + " conduitFds=" + conduitFds + " socketFds=" + socketFds + " conduitMappings=" + conduitMappings;
    }

    public static OpenResources parse(String text) {
        Map<String, String> f = ChildJvm.parseFields(text);
        return new OpenResources(Long.parseLong(f.get("fds")), Long.parseLong(f.get("conduitFds")),
                Long.parseLong(f.get("socketFds")), Long.parseLong(f.get("conduitMappings")));
    }
}
