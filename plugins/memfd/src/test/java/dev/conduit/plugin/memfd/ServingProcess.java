package dev.conduit.plugin.memfd;

import dev.conduit.spi.MemoryProvider;
import dev.conduit.tck.TestContext;

import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;

/**
 * The main class of a JVM that opens a memfd provider and exports one chunk, started by
 * {@link OtherUserImportTest} in a user namespace: {@code <shared dir> <memfd.allowed.uids>} (empty for none).
 * Prints the chunk's payload ({@code payload=<hex>}) and keeps its fd server open until its standard
 * input ends: the test connects to it meanwhile.
 */
public final class ServingProcess {

    private ServingProcess() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> config = args[1].isEmpty() ? Map.of() : Map.of("memfd.allowed.uids", args[1]);
        try (MemoryProvider provider = new MemfdPlugin().openMemoryProvider(TestContext.of(Path.of(args[0]), config))) {
            System.out.println("payload=" + HexFormat.of().formatHex(provider.export(provider.allocate(64 * 1024))));
            System.out.flush();
            while (System.in.read() >= 0) {
                // until the test closes our standard input
            }
        }
    }
}
