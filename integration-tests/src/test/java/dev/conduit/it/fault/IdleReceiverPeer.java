package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;

import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;

/**
 * A worker that never progresses: prints its address in hex, then waits until stdin closes (the
 * test stops it with {@code SIGSTOP} meanwhile, and kills it). Arguments: the shared directory,
 * the plugin. Run by {@link HungPeerTest}.
 */
public final class IdleReceiverPeer {

    private IdleReceiverPeer() {
    }

    public static void main(String[] args) throws Exception {
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(Path.of(args[0])).transports(args[1]).build();
             Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            System.out.println(HexFormat.of().formatHex(worker.address().toBytes()));
            System.out.flush();
            while (System.in.read() >= 0) {
                // wait
            }
        }
    }
}
