package dev.conduit.plugin.memfd;

import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.PayloadReader;
import dev.conduit.tck.TestContext;

import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The main class of a JVM that imports one chunk and never opens a provider, started by
 * {@link CrossProcessImportTest}: {@code <shared dir> <payload hex> <chunk length> [<memfd.trusted.uids>]}. Prints the
 * long at offset 0 and what the mapping says of its exporter ({@code exporter=ALIVE}), writes {@link #WRITTEN} at offset 8, unmaps, and reports whether any memfd
 * mapping or descriptor of the plugin is left. A failed import prints its message to stderr and
 * exits with 3.
 */
public final class ImportingProcess {
    static final long WRITTEN = 0x5EA1EDL;

    private ImportingProcess() {}

    public static void main(String[] args) {
        Path shared = Path.of(args[0]);
        byte[] payload = HexFormat.of().parseHex(args[1]);
        long chunkLength = Long.parseLong(args[2]);
        Map<String, String> config = args.length > 3 && !args[3].isEmpty() ? Map.of("memfd.trusted.uids", args[3]) : Map.of();
        try (ChunkMapping mapping = new MemfdPlugin().ipcImporter(TestContext.of(shared, config))
                .map(new PayloadReader(payload, 0, payload.length, "payload."), chunkLength)) {
            System.out.println("read=" + mapping.segment().get(JAVA_LONG, 0));
            System.out.println("exporter=" + mapping.exporterState());
            mapping.segment().set(JAVA_LONG, 8, WRITTEN);
        } catch (RuntimeException e) {
            System.err.println(e.getMessage());
            System.exit(3);
        }
        System.out.println("left=" + (Leaks.memfdMappings() + Leaks.memfdDescriptors()));
    }
}
