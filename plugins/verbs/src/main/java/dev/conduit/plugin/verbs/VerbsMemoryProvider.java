package dev.conduit.plugin.verbs;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MemoryProvider;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Memory the device can reach: each chunk is page-aligned native memory registered with
 * {@code ibv_reg_mr} in the plugin's protection domain (local write, remote read and write,
 * remote atomics when the device has them). Its export payload ({@link WireFormat.Region}) is the
 * chunk's address, length and remote key, what a peer's verbs endpoint needs for put, get and
 * atomics, and the device context's identity, which the endpoint compares with its peer's: the
 * key is valid only through queue pairs of that context's protection domain. Chunks are not
 * mappable by other processes; the plugin imports no IPC handles.
 *
 * <p>Verbs registers only memory it allocates itself: the SPI gives a plugin no access to another
 * plugin's chunks, so regions of memfd or posix pools cannot be RMA targets of verbs.
 *
 * <p>A chunk is refused once the device context failed ({@link VerbsDomain#failure}): the pool is
 * closed and a new one opened, on a new context.
 */
final class VerbsMemoryProvider implements MemoryProvider {

    private static final long PAGE = 4096;

    private final VerbsDomain.Holder holder;
    private final VerbsDomain domain;
    /**
     * Every chunk still allocated, with its registration; {@code null} for one whose free the JDK
     * refused (its memory busy): deregistered already, its memory freed by the next free or close.
     */
    private final Map<Chunk, Verbs.MemoryRegion> chunks = new IdentityHashMap<>();
    private boolean closed;

    VerbsMemoryProvider(VerbsDomain.Holder holder, VerbsDomain domain) {
        this.holder = holder;
        this.domain = domain;
    }

    private record VerbsChunk(MemorySegment segment, Arena arena) implements Chunk {
    }

    @Override
    public long pageSize() {
        return PAGE;
    }

    @Override
    public synchronized Chunk allocate(long size) {
        ensureOpen();
        if (size <= 0 || size % PAGE != 0) {
            throw new IllegalArgumentException("chunk size " + size + " is not a positive multiple of " + PAGE);
        }
        // Read here too: a process with a pool and no transport of the plugin would otherwise never learn the device failed.
        domain.takeAsyncEvents();
        if (domain.failure() != null) {
            throw new ConduitException("verbs: cannot allocate a chunk of " + size + " bytes: " + domain.failure() + ", and nothing "
                    + "registered on it works any more: close this pool and open a new one, which opens the device again");
        }
        Arena arena = Arena.ofShared();
        Verbs.MemoryRegion mr = null;
        try {
            MemorySegment memory = arena.allocate(size, PAGE);
            mr = domain.protectionDomain().register(memory, domain.access());
            VerbsChunk chunk = new VerbsChunk(memory, arena);
            chunks.put(chunk, mr);
            return chunk;
        } catch (Throwable e) {
            // Any Error too (a StackOverflowError out of the downcall): nothing else will ever free this memory.
            Throwable kept = new Teardown("freeing a chunk of " + size + " bytes whose allocation failed").region(mr).memory(arena)
                    .failure();
            if (kept != null) {
                e.addSuppressed(kept);
            }
            if (e instanceof OutOfMemoryError) {
                throw new ConduitException("verbs: cannot allocate a chunk of " + size + " bytes: " + e.getMessage(), e);
            }
            throw e;
        }
    }

    /**
     * The chunk's address, length and remote key, and the device context's identity. A chunk
     * whose free was refused (its memory busy) was deregistered by that free: it is registered
     * again, under a new remote key.
     */
    @Override
    public synchronized byte[] export(Chunk chunk) {
        ensureOpen();
        Verbs.MemoryRegion mr = region(chunk);
        if (mr == null) {
            mr = domain.protectionDomain().register(chunk.segment(), domain.access());
            chunks.put(chunk, mr);
        }
        return new WireFormat.Region(domain.context(), mr.memory().address(), mr.memory().byteSize(), mr.remoteKey()).encode();
    }

    /**
     * Deregisters the chunk, then frees its memory: a peer's later RDMA on it fails with a remote
     * access error and never reaches freed memory. If {@code ibv_dereg_mr} fails (or throws an
     * {@code Error}), the memory is kept (never freed) and the exception names the errno and says
     * so.
     *
     * @throws IllegalStateException if another thread is inside a native call on the chunk's memory
     *         (the JDK refuses to free it): the chunk stays allocated and this provider's,
     *         deregistered (a later {@link #export} registers it again), and a later free or
     *         {@link #close} frees it
     */
    @Override
    public synchronized void free(Chunk chunk) {
        Verbs.MemoryRegion mr = region(chunk);
        Arena arena = ((VerbsChunk) chunk).arena();
        // Deregistered first even when the memory turns out busy: the device must stop writing before the memory goes.
        Teardown teardown = new Teardown("freeing a chunk of " + chunk.segment().byteSize() + " bytes at 0x"
                + Long.toHexString(chunk.segment().address())).region(mr).memory(arena);
        if (!teardown.deviceMayWrite() && arena.scope().isAlive()) {
            chunks.put(chunk, null);
        } else {
            chunks.remove(chunk);
        }
        teardown.rethrow();
    }

    /** The chunk's registration, {@code null} if a refused free deregistered it. */
    private Verbs.MemoryRegion region(Chunk chunk) {
        if (!chunks.containsKey(chunk)) {
            throw new IllegalArgumentException("not a live chunk of this verbs provider: " + chunk);
        }
        return chunks.get(chunk);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("verbs memory provider is closed");
        }
    }

    /**
     * Frees every chunk, then releases the device context, each step even when an earlier one
     * failed (an {@code Error} too); the first failure is thrown, the others suppressed. A chunk
     * whose deregistration fails keeps its memory, as {@link #free} does. A chunk the JDK refuses to
     * free (another thread inside a native call on its memory) is left deregistered and allocated,
     * the close throws that {@code IllegalStateException}, and a later close frees it.
     */
    @Override
    public synchronized void close() {
        if (closed && chunks.isEmpty()) {
            return;
        }
        boolean releaseDevice = !closed;
        closed = true;
        Teardown teardown = new Teardown("closing the verbs memory provider");
        for (Chunk chunk : List.copyOf(chunks.keySet())) {
            teardown.other(() -> free(chunk)); // one chunk that cannot be freed (an Error too) keeps no other registered
        }
        if (releaseDevice) {
            teardown.other(() -> holder.release(domain));
        }
        teardown.rethrow();
    }
}
