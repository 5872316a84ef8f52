package dev.conduit.plugin.devdax;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.tck.TestContext;

import java.util.HexFormat;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The other JVM of the cross-process tests, on the module path. {@code <devices>} is the child's
 * own {@code devdax.devices} value.
 *
 * <ul>
 *   <li>{@code import <devices> <payload hex> <length>}: with no provider in this JVM, maps the
 *       export, prints {@code read=<long at 0>}, writes {@link #WRITTEN} at offset 8, unmaps, and
 *       prints {@code left=<descriptors and mappings of the device left>}. A failed import prints
 *       its message to stderr and exits with 3.</li>
 *   <li>{@code hold <devices>}: opens a provider, prints {@code ready}, and waits to be killed.</li>
 *   <li>{@code produce <devices>}: opens a provider, allocates one chunk of one alignment unit,
 *       writes {@link #PRODUCED} at offset 0, prints the export payload in hex and the chunk's
 *       length, and waits to be killed, without freeing or closing anything.</li>
 * </ul>
 */
public final class DevdaxChild {

    static final long WRITTEN = 0x5EA1EDL;
    static final long PRODUCED = 1234;

    private DevdaxChild() {
    }

    public static void main(String[] args) throws Exception {
        DevdaxPlugin plugin = new DevdaxPlugin();
        TestContext context = TestContext.of("devdax.devices", args[1]);
        switch (args[0]) {
            case "import" -> {
                byte[] payload = HexFormat.of().parseHex(args[2]);
                java.nio.file.Path device = java.nio.file.Path.of(args[1].substring(args[1].indexOf('=') + 1));
                try (ChunkMapping mapping = plugin.ipcImporter(context).map(Fixtures.reader(payload), Long.parseLong(args[3]))) {
                    System.out.println("read=" + mapping.segment().get(JAVA_LONG, 0));
                    mapping.segment().set(JAVA_LONG, 8, WRITTEN);
                } catch (RuntimeException e) {
                    System.err.println(e.getMessage());
                    System.exit(3);
                }
                System.out.println("left=" + (Fixtures.descriptorsOn(device) + Fixtures.mappingsOf(device)));
            }
            case "hold" -> {
                MemoryProvider provider = plugin.openMemoryProvider(context);
                System.out.println("ready " + provider.pageSize());
                System.out.flush();
                System.in.read(); // until killed
            }
            case "produce" -> {
                MemoryProvider provider = plugin.openMemoryProvider(context);
                Chunk chunk = provider.allocate(provider.pageSize());
                chunk.segment().set(JAVA_LONG, 0, PRODUCED);
                System.out.println(HexFormat.of().formatHex(provider.export(chunk)) + " " + provider.pageSize());
                System.out.flush();
                System.in.read(); // until killed
            }
            default -> throw new IllegalArgumentException(args[0]);
        }
    }
}
