package dev.conduit.tck.internal;

import dev.conduit.spi.Capability;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.MemoryProvider;

import java.nio.file.Path;
import java.util.Map;

/**
 * The exporting process of the memory-provider suite's checks of a killed exporter (and of the
 * live one beside it whose files a reclaim must leave alone): it opens the
 * plugin's provider, allocates one chunk, fills it with the pattern {@code seed}, exports it and
 * prints {@code EXPORTED <payload in hex>} (a plugin that does not declare IPC only allocates,
 * and prints {@code ALLOCATED}); then it waits for its stdin to end, which the test
 * never ends when it kills it. Once its stdin ends (the test skipped, or failed before the kill) it
 * closes the provider, so that it leaves nothing in the shared directory, and exits.
 *
 * <p>Arguments: {@code pluginName pluginClass sharedDirectory chunkLength seed key=value...}; the
 * plugin and the configuration are found as {@link ImportingChild} finds them.
 */
public final class ExportingChild {

    /** What the line that carries the export starts with. */
    public static final String EXPORTED = "EXPORTED ";
    /** The line of a plugin without IPC, whose chunk stays private to this process. */
    public static final String ALLOCATED = "ALLOCATED";

    private ExportingChild() {
    }

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[2]);
        long chunkLength = Long.parseLong(args[3]);
        long seed = Long.parseLong(args[4]);
        Map<String, String> config = ImportingChild.configuration(args, 5);
        ConduitPlugin plugin = ImportingChild.find(args[0], args[1]);
        try (MemoryProvider provider = plugin.openMemoryProvider(dev.conduit.tck.TestContext.of(shared, config))) {
            Chunk chunk = provider.allocate(chunkLength);
            Patterns.fill(chunk.segment(), seed);
            printAndAwaitTheEndOfStdin(plugin.capabilities().contains(Capability.IPC) ? EXPORTED + Patterns.hex(provider.export(chunk))
                    : ALLOCATED);
        } catch (RuntimeException | Error e) {
            System.out.println("ERR " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }

    /** Prints {@code line}, for the test that awaits it, then waits for stdin to end: the test's signal to close and exit. */
    static void printAndAwaitTheEndOfStdin(String line) throws java.io.IOException {
        System.out.println(line);
        System.out.flush();
        while (System.in.read() >= 0) {
            // Nothing is sent on stdin: its end is the signal.
        }
    }
}
