package dev.conduit.plugin.devdax;

import dev.conduit.spi.Chunk;

import java.lang.foreign.MemorySegment;

/**
 * One allocation of a {@link DevdaxProvider}: a range of its device, recorded in the device's
 * allocation table under an allocation id, and mapped here. Its export payload is made once, at
 * allocation: exporting changes nothing on the device, the table entry is what importers check.
 */
final class DevdaxChunk implements Chunk {

    private final DevdaxProvider provider;
    private final long offset;
    private final DaxMapping mapping;
    private final byte[] payload;
    /** Why the last free of this chunk failed, after which importers refuse its export; guarded by the provider's lock. */
    private RuntimeException freeFailure;

    /**
     * @param provider the provider that allocated it, the only one that may export and free it
     * @param offset  where the range starts on the device, a multiple of the alignment
     * @param mapping this process's mapping of the range; closed when the chunk is freed
     * @param payload the export payload ({@link DevdaxPayload})
     */
    DevdaxChunk(DevdaxProvider provider, long offset, DaxMapping mapping, byte[] payload) {
        this.provider = provider;
        this.offset = offset;
        this.mapping = mapping;
        this.payload = payload;
    }

    @Override
    public MemorySegment segment() {
        return mapping.segment();
    }

    DevdaxProvider provider() {
        return provider;
    }

    long offset() {
        return offset;
    }

    long length() {
        return mapping.segment().byteSize();
    }

    DaxMapping mapping() {
        return mapping;
    }

    /** A copy of the export payload. */
    byte[] payload() {
        return payload.clone();
    }

    /** {@code null} unless a free of this chunk failed, leaving it allocated. */
    RuntimeException freeFailure() {
        return freeFailure;
    }

    void freeFailed(RuntimeException why) {
        freeFailure = why;
    }

    @Override
    public String toString() {
        return "devdax chunk [" + offset + ", " + (offset + length()) + ")";
    }
}
