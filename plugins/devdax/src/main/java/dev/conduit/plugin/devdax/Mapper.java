package dev.conduit.plugin.devdax;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.MmapFlags;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Maps ranges of a device {@code MAP_SHARED}, with {@code MAP_SYNC} where the kernel accepts it.
 *
 * <p>{@code MAP_SYNC} (only with {@code MAP_SHARED_VALIDATE}) promises that the file system or
 * device keeps no metadata of its own in flight for the mapping, so stores that reach the
 * persistence domain are durable without {@code msync}; device DAX accepts it. Other files
 * (tmpfs, ext4 without DAX) refuse it with {@code EOPNOTSUPP}; kernels before 4.15, which do not
 * know {@code MAP_SHARED_VALIDATE}, with {@code EINVAL}. Either refusal falls back to plain
 * {@code MAP_SHARED}, and the result says which flags were used and why, for the probe and the
 * provider's log. Any other failure is the caller's to report.
 */
final class Mapper {

    static final int SYNC_FLAGS = MmapFlags.MAP_SHARED_VALIDATE | MmapFlags.MAP_SYNC;
    static final int SHARED_FLAGS = MmapFlags.MAP_SHARED;

    private Mapper() {
    }

    /**
     * Maps {@code length} bytes of {@code fd} from {@code offset} into {@code arena}, trying
     * {@code MAP_SYNC} first.
     *
     * @throws ErrnoException from the plain {@code MAP_SHARED} attempt, or from the first one if it
     *                        failed for another reason than refusing {@code MAP_SYNC}
     */
    static Mapped mapPreferringSync(Libc libc, FileDescriptor fd, long offset, long length, int protection, Arena arena) {
        try {
            return new Mapped(libc.mmap(fd, offset, length, protection, SYNC_FLAGS, arena), SYNC_FLAGS, null);
        } catch (ErrnoException e) {
            if (e.errno() != Errno.EOPNOTSUPP && e.errno() != Errno.EINVAL) throw e;
            return new Mapped(libc.mmap(fd, offset, length, protection, SHARED_FLAGS, arena), SHARED_FLAGS, e.errnoName());
        }
    }

    /**
     * A mapping and how it was made.
     *
     * @param segment      the mapped range, owned by the arena it was mapped into
     * @param flags        {@link #SYNC_FLAGS} or {@link #SHARED_FLAGS}
     * @param syncRefusal  the errno name with which the kernel refused {@code MAP_SYNC}, or {@code null} if it accepted it
     */
    record Mapped(MemorySegment segment, int flags, String syncRefusal) {

        boolean sync() {
            return syncRefusal == null;
        }

        /** {@code MAP_SHARED_VALIDATE|MAP_SYNC}, or {@code MAP_SHARED (MAP_SYNC refused: EOPNOTSUPP)}. */
        String describe() {
            return sync() ? MmapFlags.describe(flags) : MmapFlags.describe(flags) + " (MAP_SYNC refused: " + syncRefusal + ")";
        }
    }
}
