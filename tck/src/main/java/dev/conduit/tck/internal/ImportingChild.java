package dev.conduit.tck.internal;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.ImportedRegion;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.PayloadReader;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * The second process of the memory-provider suite: a consumer that opened no provider. It maps
 * what the test JVM exported, once directly through the plugin's {@code IpcImporter} and once
 * through the runtime's {@code importRegion}, checks the bytes the producer wrote, writes its own
 * pattern back for the producer to check, and prints one line per step.
 *
 * <p>Arguments: {@code pluginName pluginClass sharedDirectory payloadHex chunkLength handleHex
 * regionLength seed key=value...}, with {@code -} for the payload or the handle to skip that step. The plugin is found by {@link ServiceLoader} by name, or else
 * made from its class (a plugin in a test's own classes).
 */
public final class ImportingChild {

    private ImportingChild() {
    }

    public static void main(String[] args) throws Exception {
        String name = args[0];
        Path shared = Path.of(args[2]);
        byte[] payload = args[3].equals("-") ? null : HexFormat.of().parseHex(args[3]);
        long chunkLength = Long.parseLong(args[4]);
        byte[] handle = args[5].equals("-") ? null : HexFormat.of().parseHex(args[5]);
        long regionLength = Long.parseLong(args[6]);
        long seed = Long.parseLong(args[7]);
        Map<String, String> config = configuration(args, 8);
        ConduitPlugin plugin = find(name, args[1]);
        try {
            if (payload != null) {
                try (ChunkMapping mapping = plugin.ipcImporter(dev.conduit.tck.TestContext.of(shared, config)).map(
                    new PayloadReader(payload, 0, payload.length, "payload."), chunkLength)) {
                    check("spi", mapping.segment(), chunkLength, seed);
                }
            }
            if (handle == null) return;
            ConduitBuilder builder = Conduit.builder().discoverPlugins(false).addPlugin(find(name, args[1]))
                    .sharedDirectory(shared).environment(Map.of());
            config.forEach(builder::set);
            try (Conduit conduit = builder.build(); ImportedRegion region = conduit.importRegion(handle)) {
                check("runtime", region.segment(), regionLength, seed);
            }
        } catch (RuntimeException | Error e) {
            System.out.println("ERR " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }

    /** Checks the producer's pattern, then writes the complement of it for the producer to check. */
    private static void check(String step, MemorySegment segment, long expectedLength, long seed) {
        if (segment.byteSize() != expectedLength) {
            System.out.println("ERR " + step + ": mapped " + segment.byteSize() + " bytes, the handle says " + expectedLength);
            System.exit(1);
        }
        for (long i = 0; i < segment.byteSize(); i++) {
            byte b = segment.get(ValueLayout.JAVA_BYTE, i);
            if (b != Patterns.at(seed, i)) {
                System.out.println("ERR " + step + ": byte " + i + " is " + b + ", the producer wrote " + Patterns.at(seed, i));
                System.exit(1);
            }
            segment.set(ValueLayout.JAVA_BYTE, i, (byte) ~b);
        }
        System.out.println("OK " + step);
    }

    /** The configuration given as {@code key=value} arguments from {@code args[from]} on. */
    static Map<String, String> configuration(String[] args, int from) {
        Map<String, String> config = new LinkedHashMap<>();
        for (int i = from; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            config.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        return config;
    }

    /** The plugin named {@code name} of class {@code className}, as ServiceLoader finds it, or else made from its class. */
    static ConduitPlugin find(String name, String className) throws ReflectiveOperationException {
        for (ConduitPlugin p : ServiceLoader.load(ConduitPlugin.class)) {
            if (p.name().equals(name) && p.getClass().getName().equals(className)) return p;
        }
        return (ConduitPlugin) Class.forName(className).getConstructor().newInstance();
    }
}
