package dev.conduit.spi;

/**
 * Whether the process that exported a chunk still holds it out, as the importing process can judge
 * it ({@link ChunkMapping#exporterState()}, and {@code ImportedRegion.exporterState()} for
 * applications). Since SPI 1.1.
 */
public enum ExporterState {
    /**
     * The exporter's process holds its claim on the chunk's pool (memfd, posix: the lease of the
     * provider that allocated the chunk). It may still have freed this very chunk.
     */
    ALIVE,
    /**
     * The exporter no longer holds that claim: its process died (also by {@code kill -9}) or it
     * closed the pool (devdax: another owner started on the device since the export). Nothing will
     * write the chunk on its behalf any more; the mapping here keeps what it last wrote. Once dead,
     * always dead. A plugin judges something the kernel drops only at that death or close, not a
     * name a cleaner can remove (memfd, posix: the lease's descriptor is kept once seen held).
     */
    DEAD,
    /** The plugin cannot tell: it has no way to judge (the default), or this process may not look (another user's lease). */
    UNKNOWN
}
