package dev.conduit.shm;

import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.LockFlags;

/**
 * Watches one peer's {@link OwnerLease} with a descriptor of its own, opened once: checking is one
 * non-blocking {@code flock} — if this separate open of the lease can take the lock, its owner is
 * dead (the kernel released the owner's lock when the process died, in whatever namespace).
 */
public final class LeaseWatch implements AutoCloseable {

    private final Libc libc;
    private final String name;
    private final FileDescriptor fd;
    /** Guarded by this: a closing thread asks too ({@code ShmEndpoint#awaitsDrain}). */
    private boolean dead;
    /**
     * The {@code System.nanoTime()} at which another watch of the same lease found its owner alive
     * ({@link SenderLeases#seenAlive}): a liveness check that looked at it once, through an
     * endpoint's watch, need not look again through its connections' ({@link #aliveAsSeenAt}).
     * Only the owner's thread writes and reads it.
     */
    private long seenAliveAt;
    private boolean seenAlive;

    private LeaseWatch(Libc libc, String name, FileDescriptor fd) {
        this.libc = libc;
        this.name = name;
        this.fd = fd;
    }

    /**
     * Opens the lease {@code name} below {@code directory}.
     *
     * @throws ErrnoException when it cannot be opened (ENOENT: the owner is already gone)
     */
    public static LeaseWatch open(Libc libc, SharedDirectory directory, String name) {
        return new LeaseWatch(libc, name, directory.openLease(name));
    }

    public String name() {
        return name;
    }

    /** The user id that owns the lease file, as this process's user namespace maps it. */
    public int fileOwner() {
        return libc.fstat(fd).uid();
    }

    /**
     * Whether the owner still holds its lease. Once dead, always dead, and the descriptor is closed
     * then: a receiver short of descriptors must not keep dead peers' (it would need one to judge,
     * or to map the ring of, the sender whose message holds its queue's head, and release them only
     * once that queue is empty).
     */
    public synchronized boolean ownerAlive() {
        if (dead) return false;
        if (libc.tryFlock(fd, LockFlags.LOCK_SH | LockFlags.LOCK_NB)) {
            dead = true;
            fd.close(); // which drops the lock just taken
        }
        return !dead;
    }

    /** Notes that another watch of this lease found its owner alive at {@code now}. */
    void seenAliveAt(long now) {
        seenAliveAt = now;
        seenAlive = true;
    }

    /**
     * Whether the owner lives: as another watch of the lease found it at {@code now}
     * ({@link #seenAliveAt}), or else by a look of this watch's own ({@link #ownerAlive}).
     */
    boolean aliveAsSeenAt(long now) {
        return seenAlive && seenAliveAt == now || ownerAlive();
    }

    /**
     * Closes the descriptor, once a look under way ({@link #ownerAlive}, on another thread: a
     * worker's close forced past its owner's liveness check) is done: closed under the look, its
     * flock would fail on the closed descriptor, or, closed just after the look's check of it, run
     * on a number the process may have given another file since. A look is one non-blocking flock.
     */
    @Override
    public synchronized void close() {
        fd.close();
    }
}
