package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ExporterState;

import java.nio.file.Path;

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
 * descriptor is a {@link LeaseWatch} shared by every {@code ExporterLease} of the same lease and
 * user in this process ({@link LeaseWatchTable}: one per live exporter, not one per cached chunk),
 * which a new one takes up at its first look, and closed when the owner is found dead or the last
 * of them is {@linkplain #close closed} (its mapping's unmap). A lease no {@code ExporterLease} of
 * this process watches, or looked at once closed, is looked at by name: one that is gone reads as
 * dead, for its owner's close removes it, and so does the reclaim of a dead owner's files. Once
 * dead, it stays so without looking again: a look takes a dead owner's lease shared for an
 * instant, and a reclaim that meets it then skips that owner until its next round, so a mapping
 * does that once at most.
 */
public final class ExporterLease implements AutoCloseable {

    /** The watches of the leases looks found held, by path and user. */
    private static final LeaseWatchTable WATCHED = new LeaseWatchTable();

    private final Libc libc;
    private final Path directory;
    private final String directoryKeys;
    private final String leaseName;
    private final int user;
    /** Under {@link #WATCHED}: the lease's path and the user whose lease it must be. */
    private final String key;
    private volatile boolean dead;
    /** This one's share of the lease's watch, from a look that found it held until this is closed; guarded by this. */
    private LeaseWatch watch;
    /** Guarded by this. */
    private boolean closed;

    private ExporterLease(Libc libc, Path directory, String directoryKeys, String leaseName, int user) {
        this.libc = libc;
        this.directory = directory;
        this.directoryKeys = directoryKeys;
        this.leaseName = leaseName;
        this.user = user;
        this.key = directory.resolve(leaseName) + " " + Integer.toUnsignedString(user);
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
     * lease's name, when a look of this process found it held before), {@link ExporterState#DEAD}
     * once it does not (or the lease is gone), {@link ExporterState#UNKNOWN} when this process may
     * not open the lease (another user's, {@code 0600}: an exporter among {@code *.trusted.uids}).
     *
     * @throws ConduitException when the directory or the lease cannot be opened or locked for
     *                          another reason, naming the path, the errno and what to do
     */
    public ExporterState state() {
        if (dead) return ExporterState.DEAD;
        LeaseWatch watching = watching();
        if (watching != null) {
            Boolean alive;
            try {
                alive = watching.ownerAliveUnlessClosed();
            } catch (ErrnoException e) {
                throw cannotJudge("cannot be locked", e);
            }
            if (alive != null) return judged(alive);
        }
        FileDescriptor held = null;
        try (SharedDirectory opened = SharedDirectory.open(libc, directory, directoryKeys)) {
            held = OwnerLease.openIfHeld(libc, opened, leaseName, user);
        } catch (ErrnoException e) {
            if (held != null) held.closeAfter(e); // the directory's close failed: the lease found held is not kept
            if (e.errno() == Errno.EACCES || e.errno() == Errno.EPERM) return ExporterState.UNKNOWN;
            throw cannotJudge("does not open", e);
        }
        if (held == null) return judged(false);
        keep(LeaseWatch.of(libc, leaseName, held));
        return ExporterState.ALIVE;
    }

    /** This one's share of the lease's watch, taking up one this process keeps already; null when there is none, or once closed. */
    private synchronized LeaseWatch watching() {
        if (watch == null && !closed) watch = WATCHED.share(key);
        return watch;
    }

    /** Shares {@code opened}, or the watch another ExporterLease of the same lease added meanwhile; closes it once this is closed. */
    private void keep(LeaseWatch opened) {
        synchronized (this) {
            if (!closed && watch == null) {
                watch = WATCHED.add(key, opened);
                return;
            }
        }
        opened.close();
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

    /**
     * Gives back this one's share of the lease's watch (the last ExporterLease of a lease closes
     * its descriptor); later looks go by name. Idempotent; its mapping's unmap calls it.
     */
    @Override
    public void close() {
        LeaseWatch released;
        synchronized (this) {
            closed = true;
            released = watch;
            watch = null;
        }
        if (released != null) WATCHED.release(key, released);
    }

    /** For tests: how many leases this process keeps open for looks, or kept until found dead while still shared. */
    static int keptLeases() {
        return WATCHED.size();
    }

    @Override
    public String toString() {
        return "exporter lease " + directory.resolve(leaseName);
    }
}
