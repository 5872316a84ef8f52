package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.LockFlags;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ExporterState;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The {@link OwnerLease} of the provider that exported an imported chunk, named by the chunk's own
 * file or socket name ({@code <prefix>-<owner>-<random><suffix>}, {@link OwnerLease#newFileName},
 * {@link OwnerLease#newSocketName}), judged for {@link dev.conduit.spi.ChunkMapping#exporterState}.
 *
 * <p>The first look opens the shared directory and the lease for reading only ({@code flock} works
 * on an {@code O_RDONLY} descriptor), so it works wherever the import did, a read-only mount
 * included. Once it found the owner holding the lease, the lease's descriptor is kept, and every
 * later look is a {@code flock} on it: a cleaner that removes the lease's name while its owner
 * lives (systemd-logind's {@code RemoveIPC=yes}, a tmpfiles rule) leaves the lock where it was, so
 * the owner still reads as alive, and its close or death still releases it. Until 2026-12-07 every
 * look went by name, and such a removal read as {@code DEAD} for good while the exporter lived
 * ({@code ExporterLeaseTest#anExporterWhoseLeaseACleanerRemovedWhileItLivesIsNotJudgedDead}). The
 * descriptor is shared by every {@code ExporterLease} of the same lease in this process (one per
 * live exporter, not one per cached chunk), and closed when the owner is found dead or the last of
 * them is {@linkplain #close closed} (its mapping's unmap). A lease not yet seen held, or looked at
 * once closed, is looked at by name: one that is gone reads as dead, for its owner's close removes
 * it, and so does the reclaim of a dead owner's files. Once dead, it stays so without looking
 * again: a look takes a dead owner's lease shared for an instant, and a reclaim that meets it then
 * skips that owner until its next round, so a mapping does that once at most.
 */
public final class ExporterLease implements AutoCloseable {

    /** The leases kept open by a look that found them held, by path and user, each shared by every ExporterLease of it. */
    private static final Map<String, Kept> KEPT = new HashMap<>();

    private final Libc libc;
    private final Path directory;
    private final String directoryKeys;
    private final String leaseName;
    private final int user;
    private volatile boolean dead;
    /** The lease's descriptor once a look found it held, until the owner is found dead or this is closed; guarded by KEPT. */
    private Kept kept;
    /** Guarded by KEPT. */
    private boolean closed;

    private ExporterLease(Libc libc, Path directory, String directoryKeys, String leaseName, int user) {
        this.libc = libc;
        this.directory = directory;
        this.directoryKeys = directoryKeys;
        this.leaseName = leaseName;
        this.user = user;
    }

    /**
     * The lease of the owner of {@code fileName}, a file of that owner under {@code prefix} in
     * {@code directory} (which {@code directoryKeys} chose, for messages), whose user is {@code user}
     * (the owner's, as the chunk file or socket showed it): a lease of another user is none. Null
     * when the name carries no owner id. It holds nothing until {@link #state} finds the owner alive.
     */
    public static ExporterLease of(Libc libc, Path directory, String directoryKeys, String prefix, String fileName, int user) {
        String owner = OwnerLease.ownerOfFile(prefix, fileName);
        if (owner == null) return null;
        return new ExporterLease(libc, directory, directoryKeys, OwnerLease.leaseName(prefix, owner), user);
    }

    /**
     * {@link ExporterState#ALIVE} while the owner holds its lease (also once a cleaner removed the
     * lease's name, when an earlier look found it held), {@link ExporterState#DEAD} once it does not
     * (or the lease is gone), {@link ExporterState#UNKNOWN} when this process may not open the lease
     * (another user's, {@code 0600}: an exporter among {@code *.trusted.uids}).
     *
     * @throws ConduitException when the directory or the lease cannot be opened or locked for
     *                          another reason, naming the path, the errno and what to do
     */
    public ExporterState state() {
        if (dead) return ExporterState.DEAD;
        Boolean holds = lookAtKept();
        if (holds != null) return judged(holds);
        FileDescriptor held = null;
        try (SharedDirectory opened = SharedDirectory.open(libc, directory, directoryKeys)) {
            held = OwnerLease.openIfHeld(libc, opened, leaseName, user);
        } catch (ErrnoException e) {
            if (held != null) held.closeAfter(e); // the directory's close failed: the lease found held is not kept
            if (e.errno() == Errno.EACCES || e.errno() == Errno.EPERM) return ExporterState.UNKNOWN;
            throw cannotJudge("does not open", e);
        }
        if (held == null) return judged(false);
        keep(held);
        return ExporterState.ALIVE;
    }

    /**
     * Whether the owner holds the lease, by the kept descriptor; null when none is kept (not yet, or
     * closed). Under KEPT, so that a close in another thread does not close the descriptor under the look.
     */
    private Boolean lookAtKept() {
        synchronized (KEPT) {
            return kept == null ? null : kept.ownerHolds(libc, this);
        }
    }

    private ExporterState judged(boolean alive) {
        if (alive) return ExporterState.ALIVE;
        dead = true;
        close();
        return ExporterState.DEAD;
    }

    private ConduitException cannotJudge(String what, ErrnoException e) {
        return new ConduitException("cannot judge whether the exporter lives: its lease " + directory.resolve(leaseName) + " " + what
                + ": " + e.errnoName() + " (" + e.getMessage() + "); " + Errno.remedy(e.errno(), "check the directory set by "
                + directoryKeys), e);
    }

    /** Shares {@code held}, or the descriptor another ExporterLease of the same lease keeps already (closing {@code held}). */
    private void keep(FileDescriptor held) {
        String key = directory.resolve(leaseName) + " " + Integer.toUnsignedString(user);
        FileDescriptor spare = held;
        synchronized (KEPT) {
            if (!closed && kept == null) {
                Kept shared = KEPT.get(key);
                if (shared == null) {
                    shared = new Kept(key, held);
                    KEPT.put(key, shared);
                    spare = null;
                }
                shared.users++;
                kept = shared;
            }
        }
        if (spare != null) spare.close();
    }

    /**
     * Gives back the lease's descriptor this kept (the last ExporterLease of a lease closes it);
     * later looks go by name. Idempotent; its mapping's unmap calls it.
     */
    @Override
    public void close() {
        Kept released;
        synchronized (KEPT) {
            closed = true;
            released = kept;
            kept = null;
            if (released == null || --released.users > 0) return;
            KEPT.remove(released.key);
        }
        released.fd.close();
    }

    /** For tests: how many leases this process keeps open for looks. */
    static int keptLeases() {
        synchronized (KEPT) {
            return KEPT.size();
        }
    }

    /** A lease's descriptor kept open by looks, and how many ExporterLeases share it. */
    private static final class Kept {
        private final String key;
        private final FileDescriptor fd;
        private int users;

        Kept(String key, FileDescriptor fd) {
            this.key = key;
            this.fd = fd;
        }

        /**
         * Whether the owner still holds the lease, by a {@code flock} on the kept descriptor: taken for an
         * instant and released at once when it is free, so that a reclaim is not kept off the dead owner's
         * files. Called under KEPT by one of its users ({@link #lookAtKept}).
         */
        boolean ownerHolds(Libc libc, ExporterLease asking) {
            try {
                if (!libc.tryFlock(fd, LockFlags.LOCK_SH | LockFlags.LOCK_NB)) return true;
                libc.flock(fd, LockFlags.LOCK_UN);
                return false;
            } catch (ErrnoException e) {
                throw asking.cannotJudge("cannot be locked", e);
            }
        }
    }

    @Override
    public String toString() {
        return "exporter lease " + directory.resolve(leaseName);
    }
}
