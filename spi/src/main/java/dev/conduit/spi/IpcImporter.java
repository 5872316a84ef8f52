package dev.conduit.spi;

/**
 * Maps chunks that another process exported, given the plugin's payload of an IPC handle.
 *
 * <p><b>Implemented by</b> plugins with {@link Capability#IPC}: stateless, thread-safe, and usable
 * in a process that opened no provider. <b>Called by</b> the runtime's IPC cache on a miss only,
 * after it has validated every generic field of the handle; the importer validates its own payload
 * (with {@link PayloadReader}) and throws {@link InvalidHandleException} naming the field. Which
 * directories or devices it may touch comes from the consumer's configuration, never from the
 * handle: a payload that names {@code ..}, an absolute path or a symlink is refused.
 */
public interface IpcImporter {

    /**
     * Maps the whole exported chunk, read-write, shared with its producer.
     *
     * @param payload     the plugin's payload, exactly as {@link MemoryProvider#export(Chunk)} made it
     * @param chunkLength the chunk's length as the handle states it; the mapping must be exactly this long
     * @return the mapping; the runtime closes it when the cache evicts the entry (one evicted while in use: when its last region
     *                    closes) or the {@code Conduit} closes
     * @throws InvalidHandleException when the payload is malformed or names something not allowed
     * @throws ConduitException       when the chunk is gone (stale export) or cannot be mapped,
     *                                naming path, errno and remedy; nothing stays open
     */
    ChunkMapping map(PayloadReader payload, long chunkLength);
}
