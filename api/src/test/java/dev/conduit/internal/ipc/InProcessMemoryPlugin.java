package dev.conduit.internal.ipc;

import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.Version;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A memory plugin inside one JVM, for testing the runtime's pools and IPC cache: chunks are
 * shared arenas; an "import" maps a fresh arena of the chunk's length (counted), so that tests can
 * see every map and unmap the cache makes.
 */
public final class InProcessMemoryPlugin implements ConduitPlugin {

    public static final long PAGE = 4096;

    public final AtomicInteger maps = new AtomicInteger();
    public final AtomicInteger unmaps = new AtomicInteger();
    public final AtomicInteger chunksAllocated = new AtomicInteger();
    public final AtomicInteger chunksFreed = new AtomicInteger();
    public final AtomicInteger providersClosed = new AtomicInteger();
    /** How many of the next unmaps fail (after counting themselves), as a mapping still in use does. */
    public final AtomicInteger failingUnmaps = new AtomicInteger();
    /**
     * When set, the next unmap throws it instead of unmapping: an Error (a fault in the plugin's own
     * code), or a checked exception, undeclared, as a plugin in Kotlin or with {@code @SneakyThrows} may.
     */
    public final java.util.concurrent.atomic.AtomicReference<Throwable> unmapError = new java.util.concurrent.atomic.AtomicReference<>();
    /** The context class loader of the thread that made the last unmap, as a plugin's ServiceLoader lookup there would see it. */
    public final java.util.concurrent.atomic.AtomicReference<ClassLoader> unmapContextLoader = new java.util.concurrent.atomic.AtomicReference<>();
    /**
     * How many of the next frees are refused (the chunk stays the provider's), as a chunk still in use
     * is: IllegalStateException. The refusal revokes the chunk's export, as memfd's and devdax's do; a
     * later export publishes it under a new token.
     */
    public final AtomicInteger failingFrees = new AtomicInteger();
    /** When set, a chunk whose free was refused is not exported again, as devdax refuses it (IllegalStateException). */
    public volatile boolean refusesExportAfterRefusedFree;
    /** How many of the next frees fail giving the chunk up (no longer the provider's, its memory kept), as verbs' does when its deregistration fails. */
    public final AtomicInteger abandoningFrees = new AtomicInteger();
    /** How many of the next provider closes fail, as one with memory still in use does (devdax keeps its device then). */
    public final AtomicInteger failingProviderCloses = new AtomicInteger();
    /**
     * What the next call of a provider's operation, named by its method ({@code "pageSize"},
     * {@code "allocate"}, {@code "export"}, {@code "free"}, {@code "close"}), throws, once: a checked
     * exception too, undeclared, as a plugin in Kotlin or with {@code @SneakyThrows} may.
     */
    public final Map<String, Throwable> providerThrows = new ConcurrentHashMap<>();
    /** What imported mappings answer to {@link ChunkMapping#exporterState()}, asked each time. */
    public volatile dev.conduit.spi.ExporterState exporterState = dev.conduit.spi.ExporterState.UNKNOWN;
    /** Whether imported mappings say that an access cannot fault ({@link ChunkMapping#mayFault()}), as memfd's sealed ones do. */
    public volatile boolean sealedImports;
    /** The largest chunk the provider makes; a larger one is refused as a full file system refuses it. */
    public volatile long largestChunk = Long.MAX_VALUE;
    /** The page size the provider reports: a broken plugin's is not a power of two. */
    public volatile long pageSize = PAGE;
    /** Whether the provider makes its chunks a page shorter than asked, as a broken plugin would. */
    public volatile boolean shortChunks;
    /** Whether imports map read-only, as posix does through a read-only mount. */
    public volatile boolean readOnlyImports;
    /** Whether the plugin declares {@link Capability#CROSS_HOST} beside IPC, as one whose handles may name another host's memory. */
    public volatile boolean crossHost;
    /** Run by openMemoryProvider before it returns the provider: for what happens meanwhile. */
    public volatile Runnable whileOpeningProvider = () -> { };
    /** Run by a provider's free as it begins, before it frees or refuses: for what happens meanwhile. */
    public volatile Runnable whileFreeing = () -> { };
    /** Run by an import once it mapped the chunk, before it returns the mapping: for what happens meanwhile. */
    public volatile Runnable whileMapping = () -> { };
    private final Map<Long, Long> exported = new ConcurrentHashMap<>();
    private final AtomicLong tokens = new AtomicLong();
    private final String name;
    private final Set<ThreadMode> modes;

    public InProcessMemoryPlugin() {
        this("inproc", EnumSet.of(ThreadMode.SERIALIZED, ThreadMode.MULTI));
    }

    public InProcessMemoryPlugin(String name, Set<ThreadMode> modes) {
        this.name = name;
        this.modes = modes;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Version version() {
        return Version.parse("1.0.0");
    }

    @Override
    public String spiVersion() {
        return ConduitPlugin.SPI_VERSION;
    }

    @Override
    public Availability probe(PluginContext context) {
        return Availability.available();
    }

    @Override
    public Set<Capability> capabilities() {
        return crossHost ? EnumSet.of(Capability.MEMORY, Capability.IPC, Capability.CROSS_HOST) : EnumSet.of(Capability.MEMORY, Capability.IPC);
    }

    @Override
    public Set<ThreadMode> threadModes() {
        return modes;
    }

    @Override
    public MemoryProvider openMemoryProvider(PluginContext context) {
        Provider provider = new Provider();
        whileOpeningProvider.run();
        return provider;
    }

    @Override
    public IpcImporter ipcImporter(PluginContext context) {
        return this::map;
    }

    private ChunkMapping map(PayloadReader payload, long chunkLength) {
        long token = payload.u64("token");
        payload.end("token");
        Long length = exported.get(token);
        if (length == null) {
            throw new ConduitException("export " + token + " is gone: its producer freed the chunk");
        }
        Arena arena = Arena.ofShared();
        MemorySegment allocated = arena.allocate(chunkLength, PAGE);
        MemorySegment segment = readOnlyImports ? allocated.asReadOnly() : allocated;
        boolean mayFault = !sealedImports;
        maps.incrementAndGet();
        whileMapping.run();
        return new ChunkMapping() {
            @Override
            public MemorySegment segment() {
                return segment;
            }

            @Override
            public boolean mayFault() {
                return mayFault;
            }

            @Override
            public dev.conduit.spi.ExporterState exporterState() {
                return exporterState;
            }

            @Override
            public void close() {
                unmapContextLoader.set(Thread.currentThread().getContextClassLoader());
                unmaps.incrementAndGet();
                Throwable error = unmapError.getAndSet(null);
                if (error != null) throw InProcessMemoryPlugin.<RuntimeException>sneaky(error);
                if (failingUnmaps.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    throw new IllegalStateException("Session is acquired by 1 clients");
                }
                arena.close();
            }
        };
    }

    private void throwIfAsked(String operation) {
        Throwable thrown = providerThrows.remove(operation);
        if (thrown != null) throw InProcessMemoryPlugin.<RuntimeException>sneaky(thrown);
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E sneaky(Throwable e) throws E {
        throw (E) e;
    }

    private record InProcessChunk(Arena arena, MemorySegment segment, long[] token) implements Chunk {
    }

    private final class Provider implements MemoryProvider {
        private final Set<InProcessChunk> live = ConcurrentHashMap.newKeySet();
        /** Chunks whose free was refused ({@link #failingFrees}). */
        private final Set<InProcessChunk> refusedFrees = ConcurrentHashMap.newKeySet();

        @Override
        public long pageSize() {
            throwIfAsked("pageSize");
            return pageSize;
        }

        @Override
        public Chunk allocate(long size) {
            throwIfAsked("allocate");
            if (size > largestChunk) {
                throw new ConduitException("no room for a chunk of " + size + " bytes: at most " + largestChunk + " (on purpose)");
            }
            Arena arena = Arena.ofShared();
            InProcessChunk c = new InProcessChunk(arena, arena.allocate(shortChunks ? size - PAGE : size, PAGE), new long[1]);
            live.add(c);
            chunksAllocated.incrementAndGet();
            return c;
        }

        @Override
        public byte[] export(Chunk chunk) {
            throwIfAsked("export");
            InProcessChunk c = (InProcessChunk) chunk;
            if (!live.contains(c)) {
                // As memfd's and verbs' export of a chunk they freed: the caller's bug.
                throw new IllegalArgumentException("cannot export " + c + ": not a live chunk of this provider");
            }
            if (refusesExportAfterRefusedFree && refusedFrees.contains(c)) {
                throw new IllegalStateException("cannot export " + c + ": its free failed, so no importer would accept its export");
            }
            long token = tokens.incrementAndGet();
            c.token()[0] = token;
            exported.put(token, c.segment().byteSize());
            return new PayloadWriter().u64(token).toByteArray();
        }

        @Override
        public void free(Chunk chunk) {
            throwIfAsked("free");
            whileFreeing.run();
            InProcessChunk c = (InProcessChunk) chunk;
            if (failingFrees.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                exported.remove(c.token()[0]);
                refusedFrees.add(c);
                throw new IllegalStateException("free failed on purpose: chunk still in use");
            }
            if (abandoningFrees.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                live.remove(c);
                exported.remove(c.token()[0]);
                throw new ConduitException("free failed on purpose: the chunk's memory is kept for good");
            }
            if (live.remove(c)) {
                exported.remove(c.token()[0]);
                chunksFreed.incrementAndGet();
                c.arena().close();
            }
        }

        @Override
        public void close() {
            throwIfAsked("close");
            if (failingProviderCloses.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new ConduitException("provider close failed on purpose: memory still in use");
            }
            for (InProcessChunk c : Set.copyOf(live)) free(c);
            providersClosed.incrementAndGet();
        }
    }
}
