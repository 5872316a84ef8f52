package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ExporterState;

import java.nio.file.Path;

/**
 * The {@link OwnerLease} of the provider that exported an imported chunk, named by the chunk's own
 * file or socket name ({@code <prefix>-<owner>-<random><suffix>}, {@link OwnerLease#newFileName},
 * {@link OwnerLease#newSocketName}), judged for {@link dev.conduit.spi.ChunkMapping#exporterState}.
 *
 * <p>Each look opens the shared directory and the lease for reading only ({@code flock} works on an
 * {@code O_RDONLY} descriptor), so it works wherever the import did, a read-only mount included,
 * and holds no descriptor between looks: a mapping may outlive the directory's mount, and an
 * importer with thousands of cached chunks would spend as many descriptors. A lease that is gone
 * reads as dead: its owner's close removes it, and so does the reclaim of a dead owner's files.
 * Once dead, it stays so without looking again: a look takes a dead owner's lease shared for an
 * instant ({@link OwnerLease#isAlive}), and a reclaim that meets it then skips that owner until
 * its next round, so a mapping does that once at most.
 */
public final class ExporterLease {

    private final Libc libc;
    private final Path directory;
    private final String directoryKeys;
    private final String leaseName;
    private final int user;
    private volatile boolean dead;

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
     * when the name carries no owner id.
     */
    public static ExporterLease of(Libc libc, Path directory, String directoryKeys, String prefix, String fileName, int user) {
        String owner = OwnerLease.ownerOfFile(prefix, fileName);
        if (owner == null) return null;
        return new ExporterLease(libc, directory, directoryKeys, OwnerLease.leaseName(prefix, owner), user);
    }

    /**
     * {@link ExporterState#ALIVE} while the owner holds its lease, {@link ExporterState#DEAD} once it
     * does not (or the lease is gone), {@link ExporterState#UNKNOWN} when this process may not open
     * the lease (another user's, {@code 0600}: an exporter among {@code *.trusted.uids}).
     *
     * @throws ConduitException when the directory or the lease cannot be opened for another reason,
     *                          naming the path, the errno and what to do
     */
    public ExporterState state() {
        if (dead) return ExporterState.DEAD;
        boolean alive;
        try (SharedDirectory opened = SharedDirectory.open(libc, directory, directoryKeys)) {
            alive = OwnerLease.isAlive(libc, opened, leaseName, user);
        } catch (ErrnoException e) {
            if (e.errno() == Errno.EACCES || e.errno() == Errno.EPERM) return ExporterState.UNKNOWN;
            throw new ConduitException("cannot judge whether the exporter lives: its lease " + directory.resolve(leaseName)
                    + " does not open: " + e.errnoName() + " (" + e.getMessage() + "); "
                    + Errno.remedy(e.errno(), "check the directory set by " + directoryKeys), e);
        }
        if (alive) return ExporterState.ALIVE;
        dead = true;
        return ExporterState.DEAD;
    }

    @Override
    public String toString() {
        return "exporter lease " + directory.resolve(leaseName);
    }
}
