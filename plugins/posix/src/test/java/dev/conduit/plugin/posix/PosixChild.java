package dev.conduit.plugin.posix;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.tck.TestContext;

import java.nio.file.Path;
import java.util.HexFormat;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The other process of {@link CrossProcessTest} and {@link WithoutDacOverride}, started as a fresh JVM on the module path.
 *
 * <ul>
 *   <li>{@code import <dir> <payload hex> <length>}: with no provider in this JVM, maps the export,
 *       prints the long at offset 0, writes that value + 1 at offset 8, unmaps; a mapping that is
 *       read-only it does not write, and prints {@code read-only} after the value.</li>
 *   <li>{@code held-lease <dir> <prefix> <connection hex> <user>}: prints {@code held=} and the
 *       lease {@code OwnerLease.heldLeaseOf} finds held for the connection among leases of
 *       {@code user}, or {@code null}.</li>
 *   <li>{@code peer-lease <dir> <lease> <user>}: what a worker whose lease {@code user} owns takes for the lease a
 *       sender's CONNECT names ({@code PeerLeases#acquire}, reached by reflection, which the JVM's
 *       {@code --add-opens} allows): prints {@code watched alive=<bool>}, or {@code refused: <message>}.</li>
 *   <li>{@code probe <dir>}: prints the plugin's availability on that directory
 *       ({@code available=<bool> reason=<text>}), then {@code notHere=<capabilities ruled out> why=<reasons>}, and when
 *       available what opening a memory provider there does ({@code provider=opened} or
 *       {@code provider=<exception>: <message>}).</li>
 *   <li>{@code produce <dir>}: opens a provider, allocates a page, writes 1234 at offset 0, prints
 *       the export payload and the length, then waits to be killed without closing anything.</li>
 *   <li>{@code send <dir> <receiver's transport address hex>}: opens a transport, connects to the
 *       receiver, sends message 1 (8 bytes) and message 2 (100,000 bytes: through its bounce
 *       ring), prints its own transport address, then waits to be killed without closing anything.</li>
 *   <li>{@code reclaim <dir> <prefix>}: reclaims dead owners' files under {@code prefix} there, printing
 *       {@code removed <name>} or {@code not removed <name>: <errno>} for each file it tried, then {@code reclaimed}.</li>
 *   <li>{@code allocate <dir> <size>}: opens a provider and allocates a chunk of {@code size} bytes: prints
 *       {@code allocated}, or the refusal's message to stderr and exits with 3.</li>
 * </ul>
 */
final class PosixChild {

    private PosixChild() {
    }

    public static void main(String[] args) throws Exception {
        Path directory = Path.of(args[1]);
        PosixPlugin plugin = new PosixPlugin();
        switch (args[0]) {
            case "import" -> {
                byte[] payload = HexFormat.of().parseHex(args[2]);
                long length = Long.parseLong(args[3]);
                try (ChunkMapping mapping = plugin.ipcImporter(TestContext.of(directory))
                        .map(new PayloadReader(payload, 0, payload.length, "payload."), length)) {
                    long value = mapping.segment().get(JAVA_LONG, 0);
                    if (mapping.segment().isReadOnly()) {
                        System.out.println(value + " read-only");
                    } else {
                        mapping.segment().set(JAVA_LONG, 8, value + 1);
                        System.out.println(value);
                    }
                }
            }
            case "held-lease" -> {
                // held-lease <dir> <prefix> <connection hex> <user>: the lease OwnerLease finds held for that connection
                try (dev.conduit.shm.SharedDirectory shared = dev.conduit.shm.SharedDirectory.open(dev.conduit.linux.Linux.libc(),
                        directory, "shared.dir")) {
                    System.out.println("held=" + dev.conduit.shm.OwnerLease.heldLeaseOf(dev.conduit.linux.Linux.libc(), shared, args[2],
                            Long.parseUnsignedLong(args[3], 16), Integer.parseUnsignedInt(args[4])));
                }
            }
            case "peer-lease" -> {
                // peer-lease <dir> <lease> <user>: the watch a worker of <user> opens for a sender's lease, and its first look
                try (dev.conduit.shm.SharedDirectory shared = dev.conduit.shm.SharedDirectory.open(dev.conduit.linux.Linux.libc(),
                        directory, "shared.dir")) {
                    Class<?> type = Class.forName("dev.conduit.shm.PeerLeases");
                    var constructor = type.getDeclaredConstructor(dev.conduit.linux.Libc.class, dev.conduit.shm.SharedDirectory.class, int.class);
                    constructor.setAccessible(true);
                    Object leases = constructor.newInstance(dev.conduit.linux.Linux.libc(), shared, Integer.parseUnsignedInt(args[3]));
                    var acquire = type.getDeclaredMethod("acquire", String.class);
                    acquire.setAccessible(true);
                    try {
                        dev.conduit.shm.LeaseWatch watch = (dev.conduit.shm.LeaseWatch) acquire.invoke(leases, args[2]);
                        System.out.println("watched alive=" + watch.ownerAlive());
                        watch.close();
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        System.out.println("refused: " + e.getCause().getMessage());
                    }
                }
            }
            case "probe" -> {
                dev.conduit.spi.Availability availability = plugin.probe(TestContext.of(directory));
                System.out.println("available=" + availability.isAvailable() + " reason=" + availability.reason());
                System.out.println("notHere=" + String.join(",", availability.unsupportedHere().keySet().stream().map(Enum::name).toList())
                        + " why=" + String.join(" | ", availability.unsupportedHere().values().stream().distinct().toList()));
                if (availability.isAvailable()) {
                    try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(directory))) {
                        System.out.println("provider=opened");
                    } catch (RuntimeException e) {
                        System.out.println("provider=" + e.getClass().getSimpleName() + ": " + e.getMessage());
                    }
                }
            }
            case "produce" -> {
                MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(directory));
                Chunk chunk = provider.allocate(provider.pageSize());
                chunk.segment().set(JAVA_LONG, 0, 1234L);
                System.out.println(HexFormat.of().formatHex(provider.export(chunk)) + " " + provider.pageSize());
                System.out.flush();
                System.in.read(); // until killed
            }
            case "send" -> {
                dev.conduit.spi.Transport transport = plugin.openTransport(TestContext.of(directory)
                        .forTransport(dev.conduit.spi.ThreadMode.SINGLE, (id, h, ho, hl, p, po, pl) -> { }));
                dev.conduit.spi.TransportEndpoint endpoint = transport.connect(new PayloadReader(HexFormat.of().parseHex(args[2])), cause -> { });
                if (!endpoint.trySend(1, java.lang.foreign.MemorySegment.NULL, java.lang.foreign.MemorySegment.ofArray(new byte[8]))
                        || !endpoint.trySend(2, java.lang.foreign.MemorySegment.NULL, java.lang.foreign.MemorySegment.ofArray(largePayload()))) {
                    throw new IllegalStateException("the receiver's queue had no room for two messages");
                }
                System.out.println(HexFormat.of().formatHex(transport.address()));
                System.out.flush();
                System.in.read(); // until killed
            }
            case "allocate" -> {
                // allocate <dir> <size>: prints "allocated", or the refusal's message to stderr and exits with 3
                try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(directory))) {
                    provider.free(provider.allocate(Long.parseLong(args[2])));
                    System.out.println("allocated");
                } catch (RuntimeException e) {
                    System.err.println(e.getMessage());
                    System.exit(3);
                }
            }
            case "reclaim" -> {
                // reclaim <dir> <prefix>: a reclaim of dead owners' files there, each file it removed or could not remove
                dev.conduit.linux.Libc libc = dev.conduit.linux.Linux.libc();
                try (dev.conduit.shm.SharedDirectory shared = dev.conduit.shm.SharedDirectory.open(libc, directory, "shared.dir")) {
                    dev.conduit.shm.OwnerLease.reclaimDead(libc, shared, args[2], new dev.conduit.shm.OwnerLease.ReclaimListener() {
                        @Override
                        public void removed(String owner, String name, long bytes) {
                            System.out.println("removed " + name);
                        }

                        @Override
                        public void notRemoved(String owner, String name, dev.conduit.linux.ErrnoException e) {
                            System.out.println("not removed " + name + ": " + e.errnoName());
                        }
                    });
                }
                System.out.println("reclaimed");
            }
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    /** The large message "send" sends (through its bounce ring): bytes that tell one offset from another. */
    static byte[] largePayload() {
        byte[] b = new byte[100_000];
        for (int i = 0; i < b.length; i++) b[i] = (byte) (i * 7 + 1);
        return b;
    }
}
