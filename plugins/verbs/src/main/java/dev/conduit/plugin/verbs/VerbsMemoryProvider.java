package dev.conduit.plugin.verbs;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MemoryProvider;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
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
 *
 * <p>A chunk whose {@code ibv_dereg_mr} failed is no longer the caller's, but its registration and
 * memory stay: the provider keeps its {@link Teardown} and tries it again at every later
 * allocation and free and, at the latest, in its close, before it releases the protection domain,
 * which a registration left on it keeps from being released.
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
    /** The teardowns of chunks whose deregistration failed: their registration and memory, tried again until they go. */
    private final List<Teardown> kept = new ArrayList<>();
    private final System.Logger logger;
    private boolean closed;

    VerbsMemoryProvider(VerbsDomain.Holder holder, VerbsDomain domain, System.Logger logger) {
        this.holder = holder;
        this.domain = domain;
        this.logger = logger;
    }

    /** What the failure of a chunk's deregistration says of its retries. */
    private static final String RETRIES = "the provider tries again at its next allocation or free and at the latest in its close, "
            + "and frees them once that succeeds";

    /** What registering less is to a pool: its chunks are registered whole, each as long as it was allocated. */
    private static final String LESS = "allocate smaller or fewer chunks (free those no longer used)";

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
        retryKept().rethrow();
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
            mr = domain.protectionDomain().register(memory, domain.access(), LESS);
            VerbsChunk chunk = new VerbsChunk(memory, arena);
            chunks.put(chunk, mr);
            return chunk;
        } catch (Throwable e) {
            // Any Error too (a StackOverflowError out of the downcall): nothing else will ever free this memory.
            Teardown teardown = keepIfHeld(new Teardown("freeing a chunk of " + size + " bytes whose allocation failed").region(mr)
                    .memory(arena));
            teardown.suppressedInto(e);
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
            mr = domain.protectionDomain().register(chunk.segment(), domain.access(), LESS);
            chunks.put(chunk, mr);
        }
        return new WireFormat.Region(domain.context(), mr.memory().address(), mr.memory().byteSize(), mr.remoteKey()).encode();
    }

    /**
     * Deregisters the chunk, then frees its memory: a peer's later RDMA on it fails with a remote
     * access error and never reaches freed memory. If {@code ibv_dereg_mr} fails (or throws an
     * {@code Error}), the memory is kept and the exception names the errno and says so; the chunk
     * is no longer the caller's, and this provider tries its deregistration again at its next
     * allocations and frees and in its close, and frees the memory once it succeeded.
     *
     * @throws IllegalStateException if another thread is inside a native call on the chunk's memory
     *         (the JDK refuses to free it): the chunk stays allocated and this provider's,
     *         deregistered (a later {@link #export} registers it again), and a later free or
     *         {@link #close} frees it
     */
    @Override
    public synchronized void free(Chunk chunk) {
        Teardown retries = retryKept();
        try {
            release(chunk);
        } catch (RuntimeException e) {
            throw retries.suppressedInto(e);
        } catch (Error e) {
            throw retries.suppressedInto(e);
        }
        retries.rethrow();
    }

    /** {@link #free} without the retries of the chunks kept before. */
    private void release(Chunk chunk) {
        Verbs.MemoryRegion mr = region(chunk);
        Arena arena = ((VerbsChunk) chunk).arena();
        // Deregistered first even when the memory turns out busy: the device must stop writing before the memory goes.
        Teardown teardown = new Teardown("freeing a chunk of " + chunk.segment().byteSize() + " bytes at 0x"
                + Long.toHexString(chunk.segment().address())).region(mr).memory(arena);
        if (!teardown.deviceMayWrite() && arena.scope().isAlive()) {
            chunks.put(chunk, null);
        } else {
            chunks.remove(chunk);
            keepIfHeld(teardown);
        }
        teardown.rethrow();
    }

    /** Keeps {@code teardown} to try it again when it left a registration on the device; returns it. */
    private Teardown keepIfHeld(Teardown teardown) {
        if (teardown.deviceMayWrite()) {
            kept.add(teardown.retriedBy(RETRIES));
        }
        return teardown;
    }

    /**
     * Tries every kept teardown again; one that succeeds freed its chunk's memory and is dropped.
     * A repeated failure was thrown by the chunk's free already: the returned teardown throws only
     * an {@code Error} of the JVM's own among them, which no caller may lose.
     */
    private Teardown retryKept() {
        Teardown theJvmsOwn = new Teardown("freeing again chunks whose deregistration failed");
        for (Teardown t : List.copyOf(kept)) {
            if (t.retry()) {
                kept.remove(t);
            }
            Throwable failure = t.failure();
            if (Cleanup.isTheJvmsOwn(failure)) {
                theJvmsOwn.other(() -> {
                    throw (Error) failure;
                });
            }
        }
        return theJvmsOwn;
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
     * whose deregistration fails keeps its memory, as {@link #free} does, and is tried once more,
     * with those of earlier frees, before the protection domain is released: one that succeeds then
     * is no failure of the close (logged at DEBUG; the JVM's own {@code Error} is thrown), one that fails again
     * is logged as a WARNING naming the call, the region, the errno and the memory kept, which
     * stay, with the protection domain they keep from being released, until the process exits. A
     * chunk the JDK refuses to free (another thread inside a native call on its memory) is left
     * deregistered and allocated, the close throws that {@code IllegalStateException}, and a later
     * close frees it.
     */
    @Override
    public synchronized void close() {
        if (closed && chunks.isEmpty() && kept.isEmpty()) {
            return;
        }
        boolean releaseDevice = !closed;
        closed = true;
        Teardown teardown = new Teardown("closing the verbs memory provider");
        List<Throwable> releases = new ArrayList<>();
        for (Chunk chunk : List.copyOf(chunks.keySet())) {
            try {
                release(chunk);
            } catch (RuntimeException | Error e) { // one chunk that cannot be freed (an Error too) keeps no other registered
                releases.add(e);
            }
        }
        // Before the protection domain: a registration left on it keeps it from being released (EBUSY).
        List<Teardown> keptBefore = List.copyOf(kept);
        Teardown theJvmsOwn;
        try {
            theJvmsOwn = retryKept();
        } catch (RuntimeException | Error e) {
            theJvmsOwn = new Teardown("freeing again chunks whose deregistration failed").also(e);
        }
        for (Throwable e : releases) {
            Teardown healed = keptBefore.stream().filter(t -> t.threw(e) && !kept.contains(t)).findFirst().orElse(null);
            if (healed == null || Cleanup.isTheJvmsOwn(e)) { // the JVM's own is never lost
                teardown.also(e);
            } else {
                // Its message, memory kept for a later try, holds no more: the try here freed it.
                logger.log(System.Logger.Level.DEBUG, () -> "verbs: closing the memory provider on device " + domain.deviceName()
                        + ": " + healed.what() + " failed, and succeeded when tried again: " + e.getMessage());
            }
        }
        teardown.other(theJvmsOwn::rethrow);
        for (Teardown t : kept) {
            if (t.deviceMayWrite()) {
                domain.leftOnDevice("the memory provider's " + t.what() + " failed again: " + t.whyHeld());
                logger.log(System.Logger.Level.WARNING, "verbs: closing the memory provider on device " + domain.deviceName() + ": "
                        + t.what() + " failed again: " + t.whyHeld() + "; and the protection domain it is registered in, which it "
                        + "keeps from being released, stays held with it: all of it is released when the process exits");
            } else if (!Cleanup.isTheJvmsOwn(t.failure())) {
                teardown.other(t::rethrow); // its memory busy (another thread in a native call on it): freed by a later close
            }
        }
        kept.removeIf(Teardown::deviceMayWrite);
        if (releaseDevice) {
            teardown.other(() -> holder.release(domain));
        }
        teardown.rethrow();
    }
}
