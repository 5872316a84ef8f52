package dev.conduit.internal.worker;

import dev.conduit.spi.ConduitException;

/**
 * What the application is told when native memory cannot hold a buffer of the runtime's (an
 * encoding buffer, a copy of a payload it keeps or hands to another thread): what ran out and what
 * to do, not the JDK's bare {@link OutOfMemoryError}, which names neither. The limit depends on
 * the arena, as JDK 25 counts it: an automatic arena's memory ({@code Arena.ofAuto()}) counts
 * against {@code -XX:MaxDirectMemorySize} ("Cannot reserve ... bytes of direct buffer memory"), a
 * confined, shared or global one's only against what the system gives ("Unable to allocate ...
 * bytes"). The callers catch the error around their own allocation, so a buffer that fits costs
 * no message.
 */
public final class NativeBuffers {

    private NativeBuffers() {
    }

    /**
     * The failure to tell for {@code e}, thrown allocating {@code length} bytes.
     *
     * @param cannot    what could not be done, the start of the message ("cannot keep a payload of 5 bytes")
     * @param automatic whether the arena was an automatic one, whose memory counts against {@code -XX:MaxDirectMemorySize}
     * @param remedy    what else than more memory lets it succeed, a sentence
     */
    public static ConduitException noRoom(String cannot, long length, boolean automatic, String remedy, OutOfMemoryError e) {
        String limit = automatic
                ? "such a buffer, freed once the GC finds it unreachable, counts against the JVM's -XX:MaxDirectMemorySize (by "
                        + "default the heap's limit, -Xmx): raise it, or let the GC free the buffers no longer used"
                : "such a buffer is the system's memory, not counted against -XX:MaxDirectMemorySize: the process's, its "
                        + "cgroup's (a container's memory limit) or the machine's memory ran out";
        return new ConduitException(cannot + ": native memory has no room for a buffer of " + length + " bytes (" + e.getMessage()
                + "); " + limit + ". " + remedy, e);
    }
}
