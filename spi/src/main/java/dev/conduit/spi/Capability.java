package dev.conduit.spi;

/**
 * What a plugin can do. Declared by {@link ConduitPlugin#capabilities()}, shown by
 * {@code conduit info}, and used by the runtime to choose plugins; the TCK checks that a plugin
 * declares exactly what it implements.
 */
public enum Capability {
    /** Allocates memory: {@link ConduitPlugin#openMemoryProvider(PluginContext)}. */
    MEMORY,
    /** Exports regions and maps other processes' exports: {@link ConduitPlugin#ipcImporter(PluginContext)}. */
    IPC,
    /** Active messages between workers: {@link ConduitPlugin#openTransport(TransportContext)}. */
    AM,
    /**
     * Put and get on a peer's exported region, one-sided, as UCT's: they and {@code flush} complete
     * without the target worker's progress (its thread may be busy, asleep in {@code await}, or in
     * a flush of its own toward this process, which would otherwise deadlock the two). An RMA
     * emulated over messages, which needs the target to progress, is not this capability.
     */
    RMA,
    /** Fetch-add and compare-and-swap on a peer's exported region, one-sided as {@link #RMA} is. */
    ATOMICS,
    /** A worker can sleep until work arrives ({@link Transport#await(long)}). */
    WAKEUP,
    /** Reaches peers on other hosts. */
    CROSS_HOST
}
