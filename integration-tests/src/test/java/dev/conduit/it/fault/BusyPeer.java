package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.PeerRegion;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ThreadMode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;

/**
 * A peer that connects, sends, does RMA, imports and closes, over and over, until it is killed:
 * {@link RandomKillTest} kills it with {@code SIGKILL} at a random moment, so somewhere in one of
 * these. Arguments: shared directory, plugin, the target worker's address in hex, a region's
 * handle in hex. Prints {@code looping} once the first round completed.
 */
public final class BusyPeer {

    private BusyPeer() {
    }

    public static void main(String[] args) {
        WorkerAddress target = WorkerAddress.fromBytes(HexFormat.of().parseHex(args[2]));
        byte[] handle = HexFormat.of().parseHex(args[3]);
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(Path.of(args[0])).transports(args[1]).build();
             Arena arena = Arena.ofConfined()) {
            MemorySegment small = arena.allocate(64);
            MemorySegment large = arena.allocate(64 << 10); // through the bounce ring
            for (long round = 0; ; round++) {
                try (Worker worker = conduit.newWorker(ThreadMode.SINGLE);
                     Endpoint endpoint = worker.connect(target)) {
                    endpoint.send(1, small);
                    endpoint.send(1, large);
                    try (PeerRegion region = endpoint.peerRegion(handle)) {
                        endpoint.put(small, region, 0);
                        endpoint.get(region, 0, small);
                        endpoint.fetchAdd(region, 64, 1);
                        endpoint.compareAndSwap(region, 72, round, round + 1);
                        endpoint.flush();
                    }
                    try (ImportedRegion imported = conduit.importRegion(handle)) {
                        imported.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0);
                    }
                    worker.progress();
                }
                if (round == 0) {
                    System.out.println("looping");
                    System.out.flush();
                }
            }
        }
    }
}
